"""The client reports what happened: Ctrl-C, resumed transfers, usage and local errors, content
the server did not store as sent. Everything runs the real `hycloud` CLI against the deployed cloud;
a fault-injecting proxy in front of it freezes a transfer at a known point or plays a bad network."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import signal
import subprocess
import time
from importlib.metadata import version
from pathlib import Path

import pytest

from hycloud_core import content
from tests.e2e.conftest import HYCLOUD, User
from tests.e2e.fault_proxy import Exchange, FaultProxy

pytestmark = pytest.mark.e2e
MiB = 1024 * 1024
INTERRUPTED_LINE = "interrupted; run the same command again to resume"


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def cli_env(user: User, **extra: str) -> dict[str, str]:
    return user.cli_env(**extra)


def run(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([HYCLOUD, *args], env=env, capture_output=True, text=True, timeout=300)


def wait_for(condition, what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def interrupt(process: subprocess.Popen) -> tuple[int, str]:
    """Ctrl-C: SIGINT to the CLI; its exit status and stderr (it must exit promptly on its own)."""
    process.send_signal(signal.SIGINT)
    try:
        _, stderr = process.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()
        raise AssertionError("hycloud did not exit within 30 s of Ctrl-C") from None
    return process.returncode, stderr


def one_line_error(result: subprocess.CompletedProcess) -> str:
    err = result.stderr.strip()
    assert "Traceback" not in result.stderr and "\n" not in err and err, result.stderr
    return err


@pytest.fixture(scope="module")
def forty_mib(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("forty") / "forty.bin"
    path.write_bytes(os.urandom(40 * MiB + 5))  # 6 parts of 8 MiB: a multipart upload
    return path


def part_number(x: Exchange) -> str | None:
    return x.query.get("partNumber") if x.method == "PUT" else None


# --- 1. Ctrl-C during put, then resume ------------------------------------------------------------


def test_ctrl_c_during_put_exits_130_and_the_rerun_resumes(alice, forty_mib, tmp_path):
    total = content.part_count(forty_mib.stat().st_size)
    with FaultProxy(hold=lambda x: part_number(x) not in (None, "1")) as proxy:
        cli = subprocess.Popen(
            [HYCLOUD, "put", str(forty_mib), "/ctrl-c.bin"],
            env=cli_env(alice, **proxy.env()),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        wait_for(lambda: any(part_number(x) == "1" and x.status == 200 for x in proxy.forwarded), "part 1")
        status, stderr = interrupt(cli)
    assert status == 130, stderr
    assert stderr.strip().splitlines()[-1] == INTERRUPTED_LINE and "Traceback" not in stderr
    assert run(cli_env(alice), "stat", "/ctrl-c.bin").returncode == 5  # nothing committed

    rerun = run(cli_env(alice), "--json", "put", str(forty_mib), "/ctrl-c.bin")
    assert rerun.returncode == 0, rerun.stderr
    assert f"resuming: 1 of {total} parts done" in rerun.stderr
    assert json.loads(rerun.stdout)["sent_bytes"] == forty_mib.stat().st_size - content.PART_SIZE
    assert run(cli_env(alice), "get", "/ctrl-c.bin", str(tmp_path / "back")).returncode == 0
    assert sha((tmp_path / "back").read_bytes()) == sha(forty_mib.read_bytes())


# --- 2. interrupted get leaves no partial file and resumes ----------------------------------------


def test_ctrl_c_during_get_leaves_no_partial_file_and_the_rerun_resumes(alice, forty_mib, tmp_path):
    assert run(cli_env(alice), "put", str(forty_mib), "/get-resume.bin").returncode == 0
    total = content.part_count(forty_mib.stat().st_size)
    target = tmp_path / "down" / "forty.bin"
    target.parent.mkdir()
    ranged = lambda x: x.method == "GET" and "Range" in x.headers  # noqa: E731
    with FaultProxy(hold=lambda x: ranged(x) and not x.headers["Range"].startswith("bytes=0-")) as proxy:
        cli = subprocess.Popen(
            [HYCLOUD, "get", "/get-resume.bin", str(target)],
            env=cli_env(alice, **proxy.env()),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        wait_for(lambda: any(ranged(x) for x in proxy.forwarded), "the first piece")
        wait_for(lambda: target.with_name("forty.bin.hycloud-part.json").exists(), "the resume file")
        status, stderr = interrupt(cli)
    assert status == 130, stderr
    assert stderr.strip().splitlines()[-1] == INTERRUPTED_LINE and "Traceback" not in stderr
    assert not target.exists()

    rerun = run(cli_env(alice), "get", "/get-resume.bin", str(target))
    assert rerun.returncode == 0, rerun.stderr
    assert f"resuming: 1 of {total} parts done" in rerun.stderr
    assert sha(target.read_bytes()) == sha(forty_mib.read_bytes())
    assert sorted(p.name for p in target.parent.iterdir()) == ["forty.bin"]


def test_a_corrupt_resume_file_is_ignored_with_a_warning(alice, forty_mib, tmp_path):
    assert run(cli_env(alice), "put", str(forty_mib), "/corrupt-resume.bin").returncode == 0
    target = tmp_path / "forty.bin"
    target.with_name("forty.bin.hycloud-part.json").write_text("")  # what a full disk used to leave
    target.with_name("forty.bin.hycloud-part").write_bytes(b"\0" * 100)
    result = run(cli_env(alice), "get", "/corrupt-resume.bin", str(target))
    assert result.returncode == 0, result.stderr
    assert "warning: ignoring unreadable resume file" in result.stderr and "resuming" not in result.stderr
    assert sha(target.read_bytes()) == sha(forty_mib.read_bytes())
    assert sorted(p.name for p in tmp_path.iterdir()) == ["forty.bin"]


# --- 3. usage, configuration and local errors ----------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [("put",), ("put", "only-one-arg"), ("no-such-command",), ("ls", "--no-such-option"), ("--bogus",)],
)
def test_usage_errors_are_short_and_exit_2(alice, args):
    result = run(cli_env(alice), *args)
    assert result.returncode == 2, result
    assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) <= 6, result.stderr
    assert "Error" in result.stderr and "Usage" in result.stderr


def test_short_help_and_version(alice):
    for flag in ("-h", "--help"):
        result = run(cli_env(alice), flag)
        assert result.returncode == 0 and "Usage" in result.stdout and "put" in result.stdout, result
    sub = run(cli_env(alice), "put", "-h")
    assert sub.returncode == 0 and "--base" in sub.stdout, sub
    result = run(cli_env(alice), "--version")
    assert result.returncode == 0 and result.stdout.strip() == f"hycloud {version('hycloud')}", result


def test_config_and_local_errors_are_one_line_with_their_code(alice, tmp_path):
    bad_config = tmp_path / "config.json"
    bad_config.write_text('{"endpoint": ')
    env = {k: v for k, v in cli_env(alice).items() if k not in ("HYCLOUD_ENDPOINT", "HYCLOUD_API_KEY")}
    result = run({**env, "HYCLOUD_CONFIG": str(bad_config)}, "ls", "/")
    assert result.returncode == 3 and str(bad_config) in one_line_error(result), result

    assert run(cli_env(alice), "mkdir", "-p", "/local-errors").returncode == 0
    src = tmp_path / "small.txt"
    src.write_bytes(b"small file\n")
    assert run(cli_env(alice), "put", str(src), "/local-errors/small.txt").returncode == 0
    missing_dir = tmp_path / "no" / "such" / "dir" / "small.txt"
    result = run(cli_env(alice), "get", "/local-errors/small.txt", str(missing_dir))
    assert result.returncode == 8 and "No such file or directory" in one_line_error(result), result
    result = run(cli_env(alice), "configure", "--outputs", str(tmp_path / "missing.json"), "--key", "k")
    assert result.returncode == 8 and "missing.json" in one_line_error(result), result


# --- 4. a delta that does not rebuild the file is a one-line error ---------------------------------


def _flipped(data: bytes) -> bytes:
    body = bytearray(data)
    body[len(body) // 2] ^= 0xFF
    return bytes(body)


def flip_middle_byte(x: Exchange) -> None:
    """Corrupt the delta in transit: through /v1/delta/data, as the body of the version-aware
    answer, or inline in the job's result."""
    octet = any(
        k.lower() == "content-type" and v.startswith("application/octet-stream")
        for k, v in x.response_headers.items()
    )
    if x.route.endswith("/v1/delta/data") and x.response_body:
        x.response_body = _flipped(x.response_body)
    elif x.route.endswith("/v1/delta/download") and octet and x.response_body:
        x.response_body = _flipped(x.response_body)
        x.corrupted = True
    elif "/v1/delta/" in x.route and x.status < 300 and b'"delta"' in x.response_body:
        answer = json.loads(x.response_body)
        delta = answer.get("result", {}).get("delta")
        if delta:
            answer["result"]["delta"] = base64.b64encode(_flipped(base64.b64decode(delta))).decode()
            x.response_body = json.dumps(answer).encode()
            x.corrupted = True


def test_a_corrupted_delta_download_is_a_one_line_error_and_keeps_the_local_file(alice, tmp_path):
    v1 = os.urandom(6 * MiB)
    v2 = v1[: 3 * MiB] + os.urandom(4096) + v1[3 * MiB :]
    (tmp_path / "v1").write_bytes(v1)
    (tmp_path / "v2").write_bytes(v2)
    local = tmp_path / "mine" / "doc.bin"
    local.parent.mkdir()
    local.write_bytes(v1)
    assert run(cli_env(alice), "put", str(tmp_path / "v1"), "/delta-bad.bin").returncode == 0
    assert run(cli_env(alice), "put", str(tmp_path / "v2"), "/delta-bad.bin").returncode == 0
    with FaultProxy(on_response=flip_middle_byte) as proxy:
        result = run(cli_env(alice, **proxy.env()), "get", "--via", "delta", "/delta-bad.bin", str(local))
    assert any(
        x.route.endswith("/v1/delta/data") or getattr(x, "corrupted", False) for x in proxy.forwarded
    ), (
        result.stderr,
        [x.route for x in proxy.forwarded],
    )
    assert result.returncode == 9 and "delta" in one_line_error(result), result
    assert local.read_bytes() == v1 and sorted(p.name for p in local.parent.iterdir()) == ["doc.bin"]


# --- 5. every write is checked against the content hash the server reports ------------------------


def corrupt_small_put(x: Exchange) -> None:
    if x.method == "PUT" and x.route.endswith("/v1/files"):
        x.headers.pop("x-hycloud-sha256", None)  # a middlebox that drops unknown headers ...
        x.body = bytes([x.body[0] ^ 1]) + x.body[1:]  # ... and a bit flipped in transit


def test_a_small_file_stored_differently_fails_loudly(alice, tmp_path):
    data = b"the bytes the user meant to store\n" * 100
    src = tmp_path / "small.txt"
    src.write_bytes(data)
    with FaultProxy(on_request=corrupt_small_put) as proxy:
        result = run(cli_env(alice, **proxy.env()), "put", str(src), "/stored-wrong.txt")
    stored = sha(bytes([data[0] ^ 1]) + data[1:])
    assert result.returncode == 9, result
    assert f"server stored {stored}, expected {sha(data)}" in one_line_error(result)


def rewrite_json(route: str, edit) -> callable:
    def on_response(x: Exchange) -> None:
        if x.route.endswith(route) and x.status < 300:
            body = json.loads(x.response_body)
            edit(body)
            x.response_body = json.dumps(body).encode()

    return on_response


def test_a_large_commit_reporting_another_hash_fails_loudly(alice, tmp_path):
    src = tmp_path / "large.bin"
    src.write_bytes(os.urandom(3 * MiB))
    reported = "f" * 64
    edit = rewrite_json("/v1/uploads/commit", lambda body: body.update(content_hash=reported))
    with FaultProxy(on_response=edit) as proxy:
        result = run(cli_env(alice, **proxy.env()), "put", str(src), "/commit-wrong.bin")
    expected = content.hash_file(src)[0]
    assert result.returncode == 9, result
    assert f"server stored {reported}, expected {expected}" in one_line_error(result)


def test_a_delta_upload_reporting_another_hash_fails_loudly(alice, tmp_path):
    v1 = os.urandom(5 * MiB)
    v2 = v1[:MiB] + b"changed" + v1[MiB:]
    (tmp_path / "v1").write_bytes(v1)
    (tmp_path / "v2").write_bytes(v2)
    assert run(cli_env(alice), "put", str(tmp_path / "v1"), "/delta-wrong.bin").returncode == 0
    reported = content.hash_bytes(v1)

    def edit(status: dict) -> None:
        if status.get("state") == "ready":
            status["result"]["entry"]["content_hash"] = reported

    def on_response(x: Exchange) -> None:  # the result comes with the job's status, or its start
        for route in ("/v1/delta/jobs", "/v1/delta/upload"):
            rewrite_json(route, edit)(x)

    with FaultProxy(on_response=on_response) as proxy:
        result = run(
            cli_env(alice, **proxy.env()),
            "put",
            str(tmp_path / "v2"),
            "/delta-wrong.bin",
            "--base",
            str(tmp_path / "v1"),
            "--force-delta",
        )
    assert result.returncode == 9, result
    assert f"server stored {reported}, expected {content.hash_bytes(v2)}" in one_line_error(result)
