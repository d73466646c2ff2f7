"""What `hycloud` answers before or without the cloud, run in-process against the in-memory cloud:
every file command's help has examples and no on/off flag pairs, usage errors with --json have the
one error shape on stdout, `get` of a folder without -r says to use -r and writes nothing, --version
names the package, and `ls -lh` and plain `ls` format what a listing holds.
(Moved from tests/e2e/test_cli_habits.py, where each case was a CLI process of 2-4 s.)"""

from __future__ import annotations

import json
from importlib.metadata import version

import pytest

from hycloud.cli import exit_codes
from tests.unit.client.cli_fake import cloud, run  # noqa: F401  (cloud is a fixture)

COMMANDS = ["configure", "whoami", "mkdir", "ls", "stat", "put", "get", "rm", "rmdir", "mv", "cp"]


@pytest.mark.parametrize("command", COMMANDS)
def test_help_has_examples_and_flags_show_no_value(command, capsys):
    assert run(command, "--help") == 0
    text = capsys.readouterr().out
    assert "Examples:" in text and f"hycloud {command}" in text.split("Examples:")[1]
    assert "<bool>" not in text and "--no-" not in text


@pytest.mark.parametrize(
    "args",
    [["ls", "--no-such-option"], ["put", "{tmp}/nothing", "/x"]],
    ids=["unknown-option", "missing-local-file"],
)
def test_usage_errors_with_json_have_the_one_error_shape_on_stdout(cloud, args, tmp_path, capsys):  # noqa: F811
    code = run("--json", *[a.format(tmp=tmp_path) for a in args])
    assert code == exit_codes.USAGE
    body = json.loads(capsys.readouterr().out)
    assert list(body) == ["error"] and set(body["error"]) == {"code", "message"}, body
    assert body["error"]["code"] and body["error"]["message"]


def test_get_of_a_folder_without_r_says_use_r_and_writes_nothing(cloud, tmp_path, capsys):  # noqa: F811
    cloud.add("/h/f.txt", b"in a folder")
    assert run("get", "/h", str(tmp_path / "out")) == exit_codes.USAGE
    assert "is a directory; use -r" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_version_names_the_installed_package(capsys):
    assert run("--version") == 0
    assert capsys.readouterr().out.strip() == f"hycloud {version('hycloud')}"


def test_ls_lh_shows_human_sizes_and_plain_ls_only_names(cloud, capsys):  # noqa: F811
    cloud.add("/h/k", b"x" * 1536)
    assert run("ls", "-l", "/h") == 0
    assert capsys.readouterr().out.split()[1] == "1536"
    assert run("ls", "-lh", "/h") == 0
    assert capsys.readouterr().out.split()[1] == "1.5K"
    assert run("ls", "/h") == 0
    assert capsys.readouterr().out == "k\n"
