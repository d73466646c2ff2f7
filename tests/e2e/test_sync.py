"""`hycloud sync` against the deployed cloud: both directions, nothing re-sent when nothing changed,
exactly the changes sent, conflicts kept, dry run, filters and a killed sync resumed."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest

from tests.e2e.conftest import HYCLOUD, _make_user
from tests.e2e.fault_proxy import FaultProxy

pytestmark = [pytest.mark.e2e]
LARGE = 3 * 1024 * 1024  # above the small-file threshold: S3 behind a link file
TREE = {
    "a.txt": b"alpha\n",
    "docs/b.md": b"# bee\n" * 50,
    "docs/deep/c.bin": bytes(range(256)) * 4,
    "docs/deep/empty.txt": b"",
    "src/main.py": b"print('hi')\n",
}
DEPTH = 3  # levels below the synced folder: docs/deep/c.bin


@pytest.fixture(scope="module")
def user(deployment):
    return _make_user(deployment, "sync")


@pytest.fixture
def run(user, tmp_path):
    """The real CLI as `user`, with a state file of the test's own."""
    env = {
        **os.environ,
        "HYCLOUD_ENDPOINT": user.deployment.api_url,
        "HYCLOUD_API_KEY": user.key,
        "HYCLOUD_CONFIG": str(tmp_path / "config.json"),
        "HYCLOUD_STATE": str(tmp_path / "state.sqlite3"),
        "HYCLOUD_DEVICE": "laptop",
    }

    def cli(*args: str, code: int = 0) -> dict:
        result = subprocess.run(
            [HYCLOUD, "--json", *args], env=env, capture_output=True, text=True, timeout=300
        )
        assert result.returncode == code, result.stdout + result.stderr
        return json.loads(result.stdout)

    cli.env = env
    return cli


def write_tree(root: Path, files: dict[str, bytes]) -> None:
    for rel, data in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)


def local_files(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def remote_files(sdk, folder: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for entry in sdk.ls(folder):
        if entry["type"] == "dir":
            out.update({f"{entry['name']}/{k}": v for k, v in remote_files(sdk, entry["path"]).items()})
        else:
            out[entry["name"]] = hashlib.sha256(sdk.get_bytes(entry["path"])).hexdigest()
    return out


def test_sync_both_ways_then_a_second_sync_moves_nothing(user, run, tmp_path):
    src, back, sdk = tmp_path / "src", tmp_path / "back", user.sdk()
    write_tree(src, {**TREE, "big.bin": os.urandom(LARGE)})
    (src / "emptydir").mkdir()
    first = run("sync", str(src), "hc:/both")
    assert first["files"] == 6 and first["bytes"] >= LARGE
    assert remote_files(sdk, "/both") == local_files(src)
    assert sdk.stat("/both/emptydir")["type"] == "dir"
    again = run("sync", str(src), "hc:/both")
    assert (again["files"], again["bytes"]) == (0, 0) and again["rounds"] <= DEPTH + 1
    down = run("sync", "hc:/both", str(back))
    assert down["files"] == 6 and local_files(back) == local_files(src) and (back / "emptydir").is_dir()
    assert (back / "docs/b.md").stat().st_mtime == pytest.approx((src / "docs/b.md").stat().st_mtime, abs=1)
    again = run("sync", "hc:/both", str(back))
    assert (again["files"], again["bytes"]) == (0, 0) and again["rounds"] <= DEPTH + 1


def test_edits_adds_deletes_and_a_rename_move_exactly_those(user, run, tmp_path):
    src, sdk = tmp_path / "src", user.sdk()
    write_tree(src, TREE)
    run("sync", str(src), "hc:/changes")
    (src / "a.txt").write_bytes(b"alpha, edited\n")
    write_tree(src, {"docs/new.txt": b"new file\n"})
    (src / "src/main.py").unlink()
    (src / "docs/deep/c.bin").rename(src / "docs/c-renamed.bin")
    report = run("sync", "--delete", str(src), "hc:/changes")
    assert sorted(report["copied"]) == ["a.txt", "docs/new.txt"] and report["files"] == 2
    assert report["moved"] == [{"from": "docs/deep/c.bin", "to": "docs/c-renamed.bin"}]
    assert report["deleted"] == ["src/main.py"]
    assert report["bytes"] == len(b"alpha, edited\n") + len(b"new file\n")
    assert remote_files(sdk, "/changes") == local_files(src)
    assert run("sync", "--delete", str(src), "hc:/changes")["files"] == 0


def test_a_folder_renamed_on_one_side_moves_no_data_in_h_plus_one_rounds(user, run, tmp_path):
    """The renamed folder's files are moved in the cloud, none sent again; the exchange that finds
    the rename takes at most h + 1 rounds, h the tree's depth: here one request, the cloud's side
    of the folder the client no longer has coming whole with the diff's answer."""
    src, sdk = tmp_path / "src", user.sdk()
    write_tree(src, TREE)
    run("sync", str(src), "hc:/renamed")
    (src / "docs").rename(src / "documents")
    report = run("sync", "--delete", str(src), "hc:/renamed")
    assert (report["files"], report["bytes"]) == (0, 0), report
    moved = sorted((m["from"], m["to"]) for m in report["moved"])
    assert moved and all(a.startswith("docs/") and b == "documents/" + a[len("docs/") :] for a, b in moved)
    assert report["rounds"] <= DEPTH + 1 and report["requests"] == 1, report
    assert remote_files(sdk, "/renamed") == local_files(src)


def test_a_conflict_keeps_both_versions(user, run, tmp_path):
    src, sdk = tmp_path / "src", user.sdk()
    write_tree(src, {"notes.txt": b"v1\n"})
    run("sync", str(src), "hc:/conflict")
    (src / "notes.txt").write_bytes(b"edited on the laptop\n")
    os.utime(src / "notes.txt", (time.time() - 3600, time.time() - 3600))  # older than the cloud's edit
    sdk.put_bytes("/conflict/notes.txt", b"edited in the cloud\n")
    report = run("sync", str(src), "hc:/conflict")
    [conflict] = report["conflicts"]
    assert conflict["winner"] == "destination" and conflict["kept_as"].startswith(
        "notes.txt.conflict-laptop-"
    )
    assert sdk.get_bytes("/conflict/notes.txt") == b"edited in the cloud\n"
    assert sdk.get_bytes("/conflict/" + conflict["kept_as"]) == b"edited on the laptop\n"
    # the other way, the local side newer: the cloud's version is set aside in the local folder
    sdk.put_bytes("/conflict/notes.txt", b"cloud again\n")
    (src / "notes.txt").write_bytes(b"laptop again\n")
    back = run("sync", "hc:/conflict", str(src))
    [conflict] = back["conflicts"]
    assert conflict["winner"] == "destination" and conflict["kept_as"].startswith("notes.txt.conflict-cloud-")
    assert (src / "notes.txt").read_bytes() == b"laptop again\n"
    assert (src / conflict["kept_as"]).read_bytes() == b"cloud again\n"
    # the source newer: it replaces the destination's version, which is kept beside it
    sdk.put_bytes("/conflict/notes.txt", b"cloud, older\n")
    (src / "notes.txt").write_bytes(b"laptop, newer\n")
    os.utime(src / "notes.txt", (time.time() + 3600, time.time() + 3600))
    report = run("sync", str(src), "hc:/conflict")
    [conflict] = report["conflicts"]
    assert conflict["winner"] == "source" and conflict["kept_as"].startswith("notes.txt.conflict-cloud-")
    assert sdk.get_bytes("/conflict/notes.txt") == b"laptop, newer\n"
    assert sdk.get_bytes("/conflict/" + conflict["kept_as"]) == b"cloud, older\n"


def test_dry_run_changes_nothing(user, run, tmp_path):
    src, sdk = tmp_path / "src", user.sdk()
    write_tree(src, TREE)
    report = run("sync", "--dry-run", str(src), "hc:/dry")
    assert report["dry_run"] and report["files"] == len(TREE) and sorted(report["copied"]) == sorted(TREE)
    assert not sdk.exists("/dry")
    run("sync", str(src), "hc:/dry")
    (src / "a.txt").unlink()
    sdk.put_bytes("/dry/cloud-only.txt", b"x")
    before = local_files(src)
    assert run("sync", "--dry-run", "--delete", str(src), "hc:/dry")["deleted"] == ["a.txt"]
    assert sdk.exists("/dry/a.txt") and local_files(src) == before
    pulled = run("sync", "--dry-run", "hc:/dry", str(src))
    assert pulled["copied"] == ["a.txt", "cloud-only.txt"] and local_files(src) == before


def test_exclude_holds(user, run, tmp_path):
    src, sdk = tmp_path / "src", user.sdk()
    write_tree(src, {**TREE, "debug.log": b"log", "build/out.o": b"obj", "keep.log": b"kept"})
    run(
        "sync", str(src), "hc:/filtered", "--exclude", "*.log", "--exclude", "build/", "--include", "keep.log"
    )
    assert set(remote_files(sdk, "/filtered")) == {*TREE, "keep.log"}
    (src / "debug.log").write_bytes(b"more log")
    report = run(
        "sync", str(src), "hc:/filtered", "--exclude", "*.log", "--exclude", "build/", "--include", "keep.log"
    )
    assert report["files"] == 0 and not sdk.exists("/filtered/debug.log")


@pytest.mark.slow
def test_a_killed_sync_resumes_without_resending_done_files(user, run, tmp_path):
    src, back = tmp_path / "src", tmp_path / "back"
    files = {f"d{i % 4}/f{i:03d}.txt": os.urandom(200 + i) for i in range(384)}  # two batches of the executor
    write_tree(src, files)
    proc = subprocess.Popen(
        [HYCLOUD, "-v", "sync", str(src), "hc:/killed"], env=run.env, stderr=subprocess.PIPE, text=True
    )
    done: list[str] = []
    for line in proc.stderr:
        if line.startswith("uploaded "):
            done.append(line.split(" ", 1)[1].strip())
            if len(done) >= 20:
                break
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    done += [line.split(" ", 1)[1].strip() for line in proc.stderr if line.startswith("uploaded ")]
    assert 20 <= len(done) < len(files), "the sync finished before it could be killed"
    rest = run("sync", str(src), "hc:/killed")
    assert not set(rest["copied"]) & set(done) and rest["files"] <= len(files) - len(done)
    assert rest["files"] > 0, "nothing was left to resume: the kill came too late"
    assert rest["resumed"]
    run("sync", "hc:/killed", str(back))
    assert local_files(back) == local_files(src)


def _lines(stream, into: list[str]) -> threading.Thread:
    def read() -> None:
        for line in stream:
            into.append(line)

    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    return thread


def _wait(condition, seconds: float = 60.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


@pytest.mark.slow
def test_watch_queues_while_the_controller_is_busy_and_a_queued_upload_then_delete_sends_neither(
    user, run, tmp_path
):
    src, sdk, api = tmp_path / "src", user.sdk(), user.deployment.api_url.rstrip("/")
    write_tree(src, {"first.txt": b"first\n"})
    busy, seen = threading.Event(), []

    def refuse(x) -> None:  # while busy, no change reaches the cloud: the proxy answers 503 itself
        seen.append((x.method, x.query.get("path"), busy.is_set()))
        if (
            busy.is_set()
            and x.method in ("PUT", "POST", "DELETE")
            and not x.route.endswith("/merkle/children")
        ):
            x.method, x.url, x.body, x.refused = "GET", api + "/v1/whoami", b"", True

    def answer(x) -> None:
        if getattr(x, "refused", False):
            x.status, x.response_headers = 503, {"Content-Type": "application/json"}
            x.response_body = b'{"error": {"code": "overloaded", "message": "try later"}}'

    with FaultProxy(on_request=refuse, on_response=answer) as proxy:
        env = {**run.env, **proxy.env()}
        args = [HYCLOUD, "--json", "-v", "sync", "--watch-for", "18", str(src), "hc:/watched"]
        proc = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        out, err = [], []
        _lines(proc.stdout, out), _lines(proc.stderr, err)
        _wait(lambda: any(line.startswith("watching ") for line in err))
        busy.set()
        (src / "a.txt").write_bytes(b"made while the cloud was busy\n")

        def refused_a() -> int:
            return sum(1 for m, p, b in seen if m == "PUT" and p == "/watched/a.txt" and b)

        _wait(lambda: refused_a() >= 5)  # the first try and the client's four retries, all 503
        (src / "x.txt").write_bytes(b"short-lived\n")
        time.sleep(0.8)
        (src / "x.txt").unlink()
        time.sleep(0.8)
        busy.clear()
        proc.wait(timeout=90)
    report = json.loads("".join(out))
    assert proc.returncode == 0, "".join(err)
    assert not [s for s in seen if s[1] == "/watched/x.txt"], "the upload and delete of x.txt were sent"
    assert {"kind": "upload", "path": "/watched/a.txt"} in report["watch"]["sent"]
    assert report["watch"]["eliminated"] >= 2 and report["watch"]["held"] == []
    assert sdk.get_bytes("/watched/a.txt") == b"made while the cloud was busy\n"
    assert not sdk.exists("/watched/x.txt") and sdk.exists("/watched/first.txt")
