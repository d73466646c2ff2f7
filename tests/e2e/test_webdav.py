"""`hycloud serve webdav` against the deployed local cloud: litmus, auth, and bytes through it."""

from __future__ import annotations

import hashlib
import os
import random
import re
import shutil
import socket
import subprocess
import time

import pytest
import requests

from tests.e2e.conftest import HYCLOUD

SUITES = ("basic", "copymove", "props", "locks", "http")
EXPECTED_FAILURES: dict[str, set[str]] = {}  # suite -> test names expected to fail (none today)
MiB = 1024 * 1024


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def gateway(alice, tmp_path_factory):
    """The gateway as a user starts it, on a free port; stopped by its PID at the end."""
    port = _free_port()
    log = open(tmp_path_factory.mktemp("dav") / "server.log", "w+")
    env = {**os.environ, "HYCLOUD_CONFIG": "/nonexistent/config.json"}
    proc = subprocess.Popen(
        [HYCLOUD, "serve", "webdav", "--port", str(port), "--endpoint", alice.deployment.api_url],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            requests.options(url + "/", timeout=2)
            break
        except requests.ConnectionError:
            time.sleep(0.2)
    else:
        proc.kill()
        pytest.fail(f"gateway did not start: {log.seek(0) or log.read()}")
    yield url
    proc.terminate()
    proc.wait(timeout=10)


def _auth(user) -> tuple[str, str]:
    return (user.name, user.key)


def test_key_is_the_password_and_the_user_name_must_match(gateway, alice, bob):
    assert requests.request("PROPFIND", gateway + "/", headers={"Depth": "0"}, timeout=30).status_code == 401
    bad_key = requests.request("PROPFIND", gateway + "/", auth=(alice.name, "hck_nope"), timeout=30)
    assert bad_key.status_code == 401
    other_name = requests.request("PROPFIND", gateway + "/", auth=(bob.name, alice.key), timeout=30)
    assert other_name.status_code == 401
    good = requests.request("PROPFIND", gateway + "/", auth=_auth(alice), headers={"Depth": "0"}, timeout=30)
    assert good.status_code == 207


def test_a_propfind_of_a_whole_tree_is_refused_with_finite_depth(gateway, alice):
    for headers in ({"Depth": "infinity"}, {}):  # no Depth means infinity (RFC 4918 9.1)
        r = requests.request("PROPFIND", gateway + "/", auth=_auth(alice), headers=headers, timeout=30)
        assert r.status_code == 403 and b"propfind-finite-depth" in r.content, (headers, r.status_code)
    listed = requests.request(
        "PROPFIND", gateway + "/", auth=_auth(alice), headers={"Depth": "1"}, timeout=30
    )
    assert listed.status_code == 207


def test_bytes_through_the_gateway(gateway, alice):
    """PUT lands in the user's namespace with the right hash; GET with Range slices a large file."""
    data = random.Random(9).randbytes(3 * MiB + 99)
    sdk = alice.sdk()
    sdk.mkdir("/dav", parents=True)
    put = requests.put(gateway + "/dav/big.bin", data=data, auth=_auth(alice), timeout=120)
    assert put.status_code in (201, 204)
    stat = sdk.stat("/dav/big.bin")
    assert stat["storage"] == "large" and stat["size"] == len(data)
    back = requests.get(gateway + "/dav/big.bin", auth=_auth(alice), timeout=120)
    assert hashlib.sha256(back.content).digest() == hashlib.sha256(data).digest()
    part = requests.get(
        gateway + "/dav/big.bin", auth=_auth(alice), headers={"Range": "bytes=2097000-2097999"}
    )
    assert part.status_code == 206 and part.content == data[2097000:2098000]
    missing_parent = requests.put(gateway + "/nope/x.txt", data=b"x", auth=_auth(alice), timeout=30)
    assert missing_parent.status_code == 409


PROPPATCH = (
    '<?xml version="1.0"?><D:propertyupdate xmlns:D="DAV:" xmlns:Z="urn:hc">'
    "<D:set><D:prop><Z:colour>teal</Z:colour></D:prop></D:set></D:propertyupdate>"
)
PROPFIND = '<?xml version="1.0"?><D:propfind xmlns:D="DAV:" xmlns:Z="urn:hc"><D:prop><Z:colour/></D:prop></D:propfind>'


def _colour(gateway: str, user, path: str) -> str | None:
    r = requests.request("PROPFIND", gateway + path, data=PROPFIND, auth=_auth(user), headers={"Depth": "0"})
    assert r.status_code == 207, r.text
    found = re.search(r"<[^>]*colour[^>]*>([^<]+)<", r.text)
    return found.group(1) if found else None


def test_folder_copy_and_delete_carry_dead_properties(gateway, alice):
    """A folder is copied and removed by one API call; properties below it follow."""

    def dav(method: str, path: str, **kw) -> requests.Response:
        return requests.request(method, gateway + path, auth=_auth(alice), timeout=60, **kw)

    assert dav("MKCOL", "/pcol/").status_code == 201
    assert dav("MKCOL", "/pcol/sub/").status_code == 201
    assert dav("PUT", "/pcol/sub/f.txt", data=b"f").status_code == 201
    assert dav("PROPPATCH", "/pcol/sub/f.txt", data=PROPPATCH).status_code == 207
    copy = dav("COPY", "/pcol/", headers={"Destination": gateway + "/pcopy/", "Depth": "infinity"})
    assert copy.status_code in (201, 204)
    assert alice.sdk().get_bytes("/pcopy/sub/f.txt") == b"f"
    assert _colour(gateway, alice, "/pcopy/sub/f.txt") == "teal"
    assert dav("DELETE", "/pcopy/").status_code == 204
    assert dav("MKCOL", "/pcopy/").status_code == 201 and dav("MKCOL", "/pcopy/sub/").status_code == 201
    assert dav("PUT", "/pcopy/sub/f.txt", data=b"g").status_code == 201
    assert _colour(gateway, alice, "/pcopy/sub/f.txt") is None
    assert _colour(gateway, alice, "/pcol/sub/f.txt") == "teal"


def _litmus_summaries(output: str) -> dict[str, tuple[int, int]]:
    """suite -> (run, passed) from litmus's `<- summary for `S': of N tests run: P passed` lines."""
    found = re.findall(r"summary for `(\w+)': of (\d+) tests run: (\d+) passed", output)
    return {suite: (int(run), int(passed)) for suite, run, passed in found}


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("litmus") is None, reason="litmus is installed by the project's set-up")
def test_litmus(gateway, alice, tmp_path):
    env = {**os.environ, "TESTS": " ".join(SUITES)}
    result = subprocess.run(
        ["litmus", "--keep-going", gateway + "/", alice.name, alice.key],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    summaries = _litmus_summaries(result.stdout)
    assert set(summaries) == set(SUITES), result.stdout[-3000:]
    failed = {line for line in result.stdout.splitlines() if re.search(r"\bFAIL\b", line)}
    for suite, (run, passed) in summaries.items():
        assert run - passed == len(EXPECTED_FAILURES.get(suite, ())), (suite, run, passed, failed)
    assert summaries["basic"][0] >= 15 and summaries["props"][0] >= 28 and summaries["locks"][0] >= 37
