"""Every `hycloud` command starts by importing `hycloud.cli.main`: it must stay light. The client,
the transfer and sync machinery, the mount and WebDAV servers, requests and Rich load inside the
commands that use them, so `hycloud --help` (and `--version`) import none of them. Each check runs
in a fresh interpreter: this test process has long imported everything."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import requests

from hycloud.cli import exit_codes
from tests.unit.client.cli_fake import cloud, run  # noqa: F401  (cloud is a fixture)

# modules (and their submodules) the CLI's start-up must not import
HEAVY = (
    "hycloud.sdk.client",
    "hycloud.sdk.trees",
    "hycloud.sdk.bundles",
    "hycloud.sdk.tree_jobs",
    "hycloud.sync",
    "hycloud.mount",
    "hycloud.webdav",
    "hycloud.fsspec_fs",
    "hycloud.http",
    "hycloud.failover",
    "hycloud.progress_bar",
    "hycloud.admin",
    "hycloud.transfer.download",
    "hycloud.transfer.upload",
    "hycloud.transfer.delta",
    "hycloud.transfer.coded",
    "hycloud.transfer.auto",
    "hycloud.cli.tree_commands",
    "hycloud.cli.job_progress",
    "hycloud.cli.usage",
    "hycloud.cli.bwlimit",
    "hycloud_core.delta",
    "hycloud_core.merkle",
    "hycloud_core.bundle",
    "hycloud_core.codec",
    "hycloud_core.cost",
    "requests",
    "urllib3",
    "rich",
    "zstandard",
    "zfec",
    "fsspec",
    "pathspec",
    "sqlite3",
    "boto3",
    "botocore",
)
# the package's metadata, read only for --version (Typer's own parsing of a subcommand's options
# loads pydantic, which reads it, so only the root command can go without it)
METADATA = "importlib.metadata"

MAIN = "from hycloud.cli.main import main\ntry:\n    main({argv!r})\nexcept SystemExit:\n    pass\n"


def modules_after(code: str) -> set[str]:
    """The modules a fresh interpreter holds after running `code` (its stdout is left out)."""
    probe = f"import sys, json\n{code}\nsys.__stderr__.write(json.dumps(sorted(sys.modules)))\n"
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True
    )
    return set(json.loads(done.stderr.strip().splitlines()[-1]))


def heavy_in(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if any(m == h or m.startswith(h + ".") for h in HEAVY))


def test_importing_the_cli_loads_no_heavy_module():
    modules = modules_after("import hycloud.cli.main")
    assert "hycloud.cli.main" in modules and "typer" in modules  # the probe did import it
    assert heavy_in(modules) == [] and METADATA not in modules


@pytest.mark.parametrize("argv", [["--help"], []])
def test_the_root_help_loads_no_heavy_module(argv):
    modules = modules_after(MAIN.format(argv=argv))
    assert heavy_in(modules) == [] and METADATA not in modules


@pytest.mark.parametrize(
    "argv", [["ls", "--help"], ["put", "--help"], ["sync", "--help"], ["admin", "set-quota", "--help"]]
)
def test_a_command_help_loads_no_heavy_module(argv):
    assert heavy_in(modules_after(MAIN.format(argv=argv))) == []


def test_version_loads_only_the_package_metadata():
    modules = modules_after(MAIN.format(argv=["--version"]))
    assert heavy_in(modules) == [] and METADATA in modules


def test_a_command_loads_what_it_uses(tmp_path):
    """The check above cannot pass by never loading anything: a running command gets its client."""
    env = {"HYCLOUD_ENDPOINT": "http://127.0.0.1:9", "HYCLOUD_API_KEY": "x"}
    env["HYCLOUD_CONFIG"] = str(tmp_path / "none.toml")
    code = f"import os\nos.environ.update({env!r})\n"
    code += "from hycloud.cli.main import _client\n_client()\n"
    modules = modules_after(code)
    assert {"hycloud.sdk.client", "requests"} <= modules
    assert not any(m == "hycloud.sync" or m.startswith(("hycloud.sync.", "hycloud.mount")) for m in modules)


def test_the_sdk_names_still_import_from_the_package():
    code = (
        "import hycloud, hycloud.sdk, hycloud.transfer\n"
        "from hycloud import *\n"
        "from hycloud import HyCloud, TransferConfig, NotFoundError, TreeResult\n"
        "from hycloud.transfer import Progress, download_large, upload_large\n"
        "from hycloud.sdk.client import HyCloud as Real\n"
        "from hycloud.transfer.config import TransferConfig as RealConfig\n"
        "assert HyCloud is Real and TransferConfig is RealConfig and hycloud.HyCloud is Real\n"
        "assert set(hycloud.__all__) <= set(dir(hycloud)) and 'upload_large' in dir(hycloud.transfer)\n"
        "assert all(getattr(hycloud, name) is getattr(hycloud.sdk, name) for name in hycloud.__all__)\n"
        "for module in (hycloud, hycloud.sdk, hycloud.transfer):\n"
        "    try:\n"
        "        module.no_such_name\n"
        "    except AttributeError:\n"
        "        pass\n"
        "    else:\n"
        "        raise SystemExit(f'{module.__name__}.no_such_name did not raise')\n"
    )
    assert "hycloud.sdk.client" in modules_after(code)


def test_a_request_error_still_exits_unreachable(cloud, monkeypatch, capsys):  # noqa: F811
    """requests is no longer imported by the CLI's start-up; its errors still map to exit 7."""

    def refused(path: str) -> dict:
        raise requests.ConnectionError("cannot reach http://127.0.0.1:9")

    monkeypatch.setattr(cloud, "stat", refused)
    assert run("stat", "/x") == exit_codes.UNREACHABLE
    assert "error [unreachable]: cannot reach http://127.0.0.1:9" in capsys.readouterr().err


def test_a_local_os_error_still_exits_local_io(cloud, monkeypatch, capsys):  # noqa: F811
    def broken(path: str) -> dict:
        raise PermissionError(13, "Permission denied", "/home/u/.cache")

    monkeypatch.setattr(cloud, "stat", broken)
    assert run("stat", "/x") == exit_codes.LOCAL_IO
    assert "error [local-io]" in capsys.readouterr().err
