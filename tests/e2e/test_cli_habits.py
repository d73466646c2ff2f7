"""The `hycloud` CLI behaves as `cp`, `ls`, `mkdir` and `aws s3` users expect (one test per habit)."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess

from hycloud.cli import exit_codes
from hycloud_core import content
from tests.e2e.conftest import HYCLOUD, User
from tests.e2e.module_user import fresh_home, module_user

MiB = 1024 * 1024
ISO = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")


user = module_user("habits")
home = fresh_home("h")


def cli_json(user: User, *args: str):
    return json.loads(user.cli("--json", *args).stdout)


def no_config_env(**extra: str) -> dict:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("HYCLOUD_ENDPOINT", "HYCLOUD_API_KEY", "HYCLOUD_PROFILE")
    }
    return {**env, **extra}


def run(env: dict, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([HYCLOUD, *args], env=env, input=stdin, capture_output=True, text=True, timeout=60)


# --- 1. targets --------------------------------------------------------------------------------


def test_put_into_a_directory_by_trailing_slash_or_because_it_exists(user, home, tmp_path):
    f = tmp_path / "a.txt"
    f.write_bytes(b"alpha")
    user.cli("mkdir", f"{home}/d")
    assert cli_json(user, "put", str(f), f"{home}/d/")["path"] == f"{home}/d/a.txt"
    f.write_bytes(b"beta")
    assert cli_json(user, "put", str(f), f"{home}/d")["path"] == f"{home}/d/a.txt"
    assert user.sdk().get_bytes(f"{home}/d/a.txt") == b"beta"
    assert [e["name"] for e in user.sdk().ls(f"{home}/d")] == ["a.txt"]


def test_mv_and_cp_into_an_existing_directory(user, home):
    sdk = user.sdk()
    sdk.mkdir(f"{home}/dst")
    sdk.put_bytes(f"{home}/f1", b"one")
    sdk.put_bytes(f"{home}/f2", b"two")
    sdk.mkdir(f"{home}/folder")
    sdk.put_bytes(f"{home}/folder/in", b"inside")
    assert cli_json(user, "mv", f"{home}/f1", f"{home}/dst/")["path"] == f"{home}/dst/f1"
    assert cli_json(user, "cp", f"{home}/f2", f"{home}/dst")["path"] == f"{home}/dst/f2"
    assert cli_json(user, "mv", f"{home}/folder", f"{home}/dst")["path"] == f"{home}/dst/folder"
    assert sdk.get_bytes(f"{home}/dst/f1") == b"one" and sdk.get_bytes(f"{home}/dst/f2") == b"two"
    assert sdk.get_bytes(f"{home}/dst/folder/in") == b"inside"
    assert sorted(e["name"] for e in sdk.ls(home)) == ["dst", "f2"]


def test_get_into_an_existing_or_slash_ended_local_directory(user, home, tmp_path):
    user.sdk().put_bytes(f"{home}/g.txt", b"gamma")
    (tmp_path / "there").mkdir()
    user.cli("get", f"{home}/g.txt", str(tmp_path / "there"))
    user.cli("get", f"{home}/g.txt", str(tmp_path / "new") + "/")
    assert (tmp_path / "there" / "g.txt").read_bytes() == b"gamma"
    assert (tmp_path / "new" / "g.txt").read_bytes() == b"gamma"


def test_mkdir_of_an_existing_directory_is_an_error_and_p_is_idempotent(user, home):
    again = user.cli("mkdir", home, check=False)
    assert again.returncode == exit_codes.CONFLICT, again.stderr
    assert "already exists" in again.stderr and "created" not in again.stdout
    assert user.cli("mkdir", "-p", home).returncode == 0
    assert user.cli("mkdir", "-p", f"{home}/x/y").returncode == 0
    assert user.sdk().stat(f"{home}/x/y")["type"] == "dir"


# --- 2. output ---------------------------------------------------------------------------------


def test_ls_l_and_stat_show_human_sizes_with_h_and_iso_times(user, home):
    user.sdk().put_bytes(f"{home}/k", b"x" * 1536)
    long = user.cli("ls", "-l", home).stdout.splitlines()
    assert len(long) == 1 and long[0].split()[1] == "1536" and ISO.search(long[0]) and long[0].endswith(" k")
    stat = dict(line.split(": ", 1) for line in user.cli("stat", "-h", f"{home}/k").stdout.splitlines())
    assert stat["size"] == "1.5K" and ISO.fullmatch(stat["mtime"])
    # `ls -lh` and plain `ls` print the same entries through the same formatting:
    # tests/unit/client/test_cli_habits.py


def test_output_to_a_pipe_is_neither_wrapped_nor_cut(user, home, tmp_path):
    name = "n" * 150 + ".txt"
    local = tmp_path / name
    local.write_bytes(b"data")
    put = user.cli("put", str(local), f"{home}/")
    assert put.stdout == f"uploaded {local} -> {home}/{name} (4 bytes, small)\n"
    lines = user.cli("ls", "-l", home).stdout.splitlines()
    assert len(lines) == 1 and lines[0].endswith(" " + name)
    assert user.cli("stat", f"{home}/{name}").stdout.splitlines()[0] == f"name: {name}"


def test_json_errors_have_one_shape_on_stdout(user, home):
    cases = [
        (["stat", f"{home}/missing"], exit_codes.NOT_FOUND),
        (["mkdir", home], exit_codes.CONFLICT),
    ]  # the cloud's errors; usage errors (no cloud involved): tests/unit/client/test_cli_habits.py
    for args, code in cases:
        result = user.cli("--json", *args, check=False)
        assert result.returncode == code, (args, result.stdout, result.stderr)
        body = json.loads(result.stdout)
        assert list(body) == ["error"] and set(body["error"]) == {"code", "message"}, body
        assert body["error"]["code"] and body["error"]["message"]


def test_one_name_for_a_files_hash_across_commands(user, home, tmp_path):
    small, large = tmp_path / "s", tmp_path / "l"
    small.write_bytes(os.urandom(1000))
    large.write_bytes(os.urandom(3 * MiB))
    outputs = [
        cli_json(user, "put", str(small), f"{home}/s"),
        cli_json(user, "put", str(large), f"{home}/l"),
        cli_json(user, "stat", f"{home}/l"),
        *cli_json(user, "ls", home),
    ]
    plain = {f"{home}/s": hashlib.sha256(small.read_bytes()).hexdigest()}
    plain[f"{home}/l"] = hashlib.sha256(large.read_bytes()).hexdigest()
    # `sha256` names only the plain sha256 (what sha256sum prints), never the content hash
    assert all(out.get("sha256") in (None, plain[out["path"]]) for out in outputs), outputs
    assert outputs[2]["sha256"] == plain[f"{home}/l"]
    assert outputs[0]["content_hash"] == content.hash_bytes(small.read_bytes())
    assert outputs[1]["content_hash"] == outputs[2]["content_hash"] == content.hash_bytes(large.read_bytes())


# --- 3. global options, completion, profiles, help -----------------------------------------------


def test_version_verbose_and_quiet(user, home, tmp_path):
    # --version asks no cloud: tests/unit/client/test_cli_habits.py
    verbose = user.cli("-v", "stat", home)
    assert re.search(r"GET \S+/v1/stat\?path=\S+ -> 200 \(\d+ ms\)", verbose.stderr), verbose.stderr
    assert "GET" not in user.cli("stat", home).stderr
    f = tmp_path / "q"
    f.write_bytes(b"quiet")
    quiet = user.cli("-q", "put", str(f), f"{home}/q")
    assert quiet.stdout == quiet.stderr == ""
    assert user.sdk().get_bytes(f"{home}/q") == b"quiet"


def test_shell_completion_is_on(user):
    # `--show-completion` takes no value: it names the shell it runs in (its parent process), so it
    # runs in bash here as a user's would, whatever started the test (a second command keeps bash
    # from handing its process to hycloud)
    env = {**os.environ, "HYCLOUD_ENDPOINT": user.deployment.api_url, "HYCLOUD_API_KEY": user.key}
    shown = subprocess.run(
        ["bash", "-c", f"{HYCLOUD} --show-completion; exit $?"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert shown.returncode == 0 and "_HYCLOUD_COMPLETE" in shown.stdout, shown.stderr
    env = {**os.environ, "_HYCLOUD_COMPLETE": "complete_bash", "COMP_WORDS": "hycloud mk", "COMP_CWORD": "1"}
    assert run(env, "").stdout.split() == ["mkdir"]


def test_named_profiles_from_option_environment_and_config_sections(user, deployment, tmp_path):
    config = tmp_path / "config.json"
    sections = {
        "default": {"endpoint": deployment.api_url, "api_key": "hc_bogus"},
        "work": {"endpoint": deployment.api_url, "api_key": user.key},
    }
    config.write_text(json.dumps({"profiles": sections}))
    env = no_config_env(HYCLOUD_CONFIG=str(config))
    assert run(env, "whoami").returncode == exit_codes.AUTH
    assert run(env, "--profile", "work", "whoami").stdout.strip() == user.name
    assert run({**env, "HYCLOUD_PROFILE": "work"}, "whoami").stdout.strip() == user.name
    missing = run(env, "--profile", "nope", "whoami")
    assert missing.returncode == exit_codes.NOT_CONFIGURED and "'nope'" in missing.stderr


# every command's --help: tests/unit/client/test_cli_habits.py


# --- 4. configure ------------------------------------------------------------------------------


def test_configure_reads_the_key_from_stdin_and_checks_it_before_saving(user, deployment, tmp_path):
    config = tmp_path / "c" / "config.json"
    env = no_config_env(HYCLOUD_CONFIG=str(config))
    bogus = run(env, "configure", "--endpoint", deployment.api_url, "--key-stdin", stdin="hc_bogus\n")
    assert bogus.returncode == exit_codes.AUTH and "nothing saved" in bogus.stderr and not config.exists()
    nowhere = run(env, "configure", "--endpoint", "http://127.0.0.1:9/", "--key-stdin", stdin=user.key + "\n")
    assert nowhere.returncode == exit_codes.UNREACHABLE and "nothing saved" in nowhere.stderr
    assert not config.exists()
    saved = run(env, "configure", "--endpoint", deployment.api_url, "--key-stdin", stdin=user.key + "\n")
    assert saved.returncode == 0, saved.stderr
    assert user.key not in saved.stdout + saved.stderr
    assert oct(config.stat().st_mode & 0o777) == "0o600"
    assert run(env, "whoami").stdout.strip() == user.name


# --- 5. trees: symlinks --------------------------------------------------------------------------


def test_put_r_reports_symlinks_and_follows_them_with_L(user, home, tmp_path):
    tree, outside = tmp_path / "tree", tmp_path / "outside"
    tree.mkdir()
    outside.mkdir()
    (tree / "real.txt").write_bytes(b"real")
    (outside / "o.txt").write_bytes(b"out")
    (tree / "link.txt").symlink_to(tree / "real.txt")
    (tree / "linkdir").symlink_to(outside)
    plain = user.cli("put", "-r", str(tree), f"{home}/t1")
    assert f"skipped symlink {tree / 'link.txt'}; use -L to follow" in plain.stderr
    assert f"skipped symlink {tree / 'linkdir'}; use -L to follow" in plain.stderr
    assert sorted(e["name"] for e in user.sdk().ls(f"{home}/t1")) == ["real.txt"]
    user.cli("put", "-r", "-L", str(tree), f"{home}/t2")
    assert user.sdk().get_bytes(f"{home}/t2/link.txt") == b"real"
    assert user.sdk().get_bytes(f"{home}/t2/linkdir/o.txt") == b"out"


def test_put_r_and_get_r_keep_modification_times_and_mode_bits(user, home, tmp_path):
    tree = tmp_path / "tree"
    (tree / "bin").mkdir(parents=True)
    files = {"bin/run.sh": (b"#!/bin/sh\necho hi\n", 0o755), "notes.txt": (b"notes", 0o644)}
    files["big.bin"] = (os.urandom(3 * MiB), 0o750)  # large: kept in the link file
    for i, (rel, (data, mode)) in enumerate(files.items()):
        (tree / rel).write_bytes(data)
        (tree / rel).chmod(mode)
        os.utime(tree / rel, (978307200 + i, 978307200 + i))  # 2001-01-01
    user.cli("put", "-r", str(tree), f"{home}/t")
    stat = cli_json(user, "stat", f"{home}/t/bin/run.sh")
    assert stat["mode"] == 0o755 and stat["mtime"] == 978307200
    for bad in ({"mode": "512"}, {"mode": "-1"}, {"mtime": "nan"}, {"mtime": "-5"}):
        refused = user.api().call("PUT", "/v1/files", params={"path": f"{home}/bad", **bad}, data=b"x")
        assert refused.status_code in (400, 422) and "error" in refused.json(), (bad, refused.text)
    user.cli("get", "-r", f"{home}/t", str(tmp_path / "back"))
    for rel, (data, mode) in files.items():
        back = tmp_path / "back" / rel
        assert back.read_bytes() == data
        assert (back.stat().st_mode & 0o777, int(back.stat().st_mtime)) == (
            mode,
            int((tree / rel).stat().st_mtime),
        )
