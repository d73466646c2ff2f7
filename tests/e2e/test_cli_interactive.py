"""The CLI at a real terminal (a pty driven by pexpect): the hidden key prompt, and Ctrl-C."""

from __future__ import annotations

import os
import time

import pexpect
import pytest

from hycloud.cli import exit_codes
from tests.e2e.conftest import HYCLOUD, User, _make_user
from tests.e2e.fault_proxy import FaultProxy

MiB = 1024 * 1024


@pytest.fixture(scope="module")
def user(deployment) -> User:
    return _make_user(deployment, "tty")


def terminal_env(**extra: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("HYCLOUD_ENDPOINT", "HYCLOUD_API_KEY", "HYCLOUD_PROFILE")
    }
    return {**env, "TERM": "xterm", "COLUMNS": "100", **extra}


def spawn(env: dict[str, str], *args: str) -> pexpect.spawn:
    return pexpect.spawn(HYCLOUD, list(args), env=env, encoding="utf-8", timeout=60, dimensions=(40, 100))


def finish(child: pexpect.spawn) -> tuple[int, str]:
    child.expect(pexpect.EOF)
    child.close()
    return child.exitstatus, child.before


def test_configure_prompts_for_the_key_without_echo_and_the_saved_profile_works(user, tmp_path):
    config = tmp_path / "config.json"
    env = terminal_env(HYCLOUD_CONFIG=str(config))
    child = spawn(env, "configure", "--endpoint", user.deployment.api_url)
    child.expect("API key: ")
    child.sendline(user.key)
    status, shown = finish(child)
    assert status == 0, shown
    assert user.key not in shown  # not echoed
    assert "saved profile 'default'" in shown
    whoami = spawn(env, "whoami")
    assert finish(whoami) == (0, user.name + "\r\n")

    refused = spawn(env, "--profile", "other", "configure", "--endpoint", user.deployment.api_url)
    refused.expect("API key: ")
    refused.sendline("hck_not_a_key")
    status, shown = finish(refused)
    assert status == exit_codes.AUTH and "nothing saved" in shown
    assert '"other"' not in config.read_text()


def test_ctrl_c_during_a_download_exits_130_leaving_no_partial_file(user, tmp_path):
    source = tmp_path / "big.bin"
    source.write_bytes(os.urandom(20 * MiB))
    user.cli("put", str(source), "/tty-big.bin")
    target = tmp_path / "down" / "big.bin"
    target.parent.mkdir()
    ranged = lambda x: x.method == "GET" and "Range" in x.headers  # noqa: E731
    proxy = FaultProxy(hold=lambda x: ranged(x) and not x.headers["Range"].startswith("bytes=0-"))
    env = terminal_env(
        HYCLOUD_ENDPOINT=user.deployment.api_url,
        HYCLOUD_API_KEY=user.key,
        HYCLOUD_CONFIG="/nonexistent/config.json",
        **proxy.env(),
    )
    child = spawn(env, "get", "/tty-big.bin", str(target))  # forked before the proxy has threads
    with proxy:  # already listening: the CLI's first requests wait in its backlog
        deadline = time.monotonic() + 60
        while not any(ranged(x) for x in proxy.forwarded):
            assert time.monotonic() < deadline and child.isalive(), "the download never started"
            child.expect([pexpect.TIMEOUT, pexpect.EOF], timeout=0.05)  # drain the terminal
        child.sendcontrol("c")
        status, shown = finish(child)
    assert status == exit_codes.INTERRUPTED, shown
    assert "interrupted; run the same command again to resume" in shown and "Traceback" not in shown
    assert not target.exists()
    assert all(p.name.startswith("big.bin.hycloud-part") for p in target.parent.iterdir())
