"""Share links: anyone holding the link downloads the file without a key, until expiry or revocation."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import time

import pytest
import requests

from hycloud_core.constants import MiB
from tests.e2e.conftest import HYCLOUD, ApiSession


def _share(user, path: str, expires: str = "1h") -> dict:
    return json.loads(user.cli("--json", "share", path, "--expires", expires).stdout)


def _anonymous(url: str) -> requests.Response:
    return requests.get(url, timeout=60)


@pytest.fixture(scope="module")
def files(alice, tmp_path_factory):
    """A small file (EFS, answered as bytes) and a large one (S3, answered by a redirect)."""
    folder = tmp_path_factory.mktemp("share")
    small, large = os.urandom(100_000), os.urandom(3 * MiB + 17)
    (folder / "small.bin").write_bytes(small)
    (folder / "large.bin").write_bytes(large)
    alice.cli("mkdir", "-p", "/share")
    alice.cli("put", str(folder / "small.bin"), "/share/small.bin")
    alice.cli("put", str(folder / "large.bin"), "/share/large.bin")
    return {"/share/small.bin": small, "/share/large.bin": large}


def test_share_link_downloads_byte_exact_without_a_key(alice, files, deployment):
    before = alice.api().call("GET", "/v1/usage", params={"source": "records"}).json()["share_links"]
    for path, data in files.items():
        share = _share(alice, path)
        assert share["url"].startswith(deployment.api_url + "/v1/shared/")
        first = requests.get(share["url"], timeout=60, allow_redirects=False)
        assert first.status_code == 302 and "X-Amz-Signature" in first.headers["Location"]
        assert "Authorization" not in first.request.headers
        got = _anonymous(share["url"])
        assert got.status_code == 200
        assert hashlib.sha256(got.content).hexdigest() == hashlib.sha256(data).hexdigest()
        record = deployment.client("dynamodb").get_item(
            TableName=deployment.outputs["TableName"],
            Key={"pk": {"S": f"SHARE#{share['id']}"}, "sk": {"S": "SHARE"}},
            ConsistentRead=True,
        )["Item"]
        assert record["user"]["S"] == alice.id and record["path"]["S"] == path
        assert int(record["downloads"]["N"]) == 2
    after = alice.api().call("GET", "/v1/usage", params={"source": "records"}).json()["share_links"]
    assert after["downloads"] - before["downloads"] == 4
    assert after["bytes_served"] - before["bytes_served"] == 2 * sum(len(d) for d in files.values())


def test_revoked_link_is_refused(alice, files):
    share = _share(alice, "/share/small.bin")
    assert _anonymous(share["url"]).status_code == 200
    revoked = json.loads(alice.cli("--json", "share", "--revoke", share["id"]).stdout)
    assert revoked["state"] == "revoked"
    gone = _anonymous(share["url"])
    assert gone.status_code == 410
    assert gone.json()["error"]["code"] == "share-gone"
    listed = json.loads(alice.cli("--json", "share", "--list").stdout)["shares"]
    assert {s["id"]: s["state"] for s in listed}[share["id"]] == "revoked"


def test_expired_link_is_refused(alice, files):
    made = alice.api().call("POST", "/v1/shares", json={"path": "/share/small.bin", "expires_in": 1})
    assert made.status_code == 201, made.text
    url = alice.deployment.api_url + made.json()["url_path"]
    time.sleep(1.5)
    gone = _anonymous(url)
    assert gone.status_code == 410 and "expired" in gone.json()["error"]["message"]


def test_deleted_file_link_answers_404(alice, files, tmp_path):
    (tmp_path / "gone.txt").write_bytes(b"soon gone")
    alice.cli("put", str(tmp_path / "gone.txt"), "/share/gone.txt")
    share = _share(alice, "/share/gone.txt")
    alice.cli("rm", "/share/gone.txt")
    answer = _anonymous(share["url"])
    assert answer.status_code == 404 and answer.json()["error"]["code"] == "shared-file-gone"


def test_nobody_shares_or_revokes_what_is_not_theirs(alice, bob, files):
    refused = bob.api().call("POST", "/v1/shares", json={"path": "/share/small.bin"})
    assert refused.status_code == 404  # paths are per user: bob's /share/small.bin does not exist
    share = _share(alice, "/share/small.bin")
    assert bob.api().call("DELETE", f"/v1/shares/{share['id']}").status_code == 404
    assert share["id"] not in json.dumps(bob.api().call("GET", "/v1/shares").json())
    assert _anonymous(share["url"]).status_code == 200  # still alice's and still active
    assert (
        requests.post(alice.deployment.api_url + "/v1/shares", json={"path": "/x"}, timeout=30).status_code
        == 401
    )


@pytest.mark.parametrize(
    "token", ["x" * 32, "..%2F..%2Fetc%2Fpasswd", "a" * 5000, "%00" * 11, "' OR 1=1 --", "ÿ" * 32]
)
def test_hostile_tokens_get_a_clear_4xx(deployment, token):
    answer = _anonymous(f"{deployment.api_url}/v1/shared/{token}")
    assert 400 <= answer.status_code < 500
    assert answer.json()["error"]["code"] in {"no-such-share", "bad-share-token", "no-such-route"}


def test_bad_share_requests_get_4xx(alice, files):
    api = alice.api()
    assert api.call("POST", "/v1/shares", json={"path": "/share"}).status_code == 409  # a directory
    assert (
        api.call("POST", "/v1/shares", json={"path": "/share/small.bin", "expires_in": 0}).status_code == 400
    )
    too_long = {"path": "/share/small.bin", "expires_in": 10**9}
    assert api.call("POST", "/v1/shares", json=too_long).status_code == 400
    bad = alice.cli("share", "/share/small.bin", "--expires", "soon", check=False)
    assert bad.returncode != 0 and "bad-duration" in bad.stderr


def test_links_stop_while_their_owner_is_disabled(carol, deployment, tmp_path):
    (tmp_path / "c.txt").write_bytes(b"carol's")
    carol.cli("put", str(tmp_path / "c.txt"), "/c.txt")
    share = _share(carol, "/c.txt")
    admin = {**os.environ, **deployment.env}
    table = ["--table", deployment.outputs["TableName"]]
    subprocess.run([HYCLOUD, "admin", "disable-user", carol.name, *table], env=admin, check=True, timeout=60)
    try:
        assert _anonymous(share["url"]).status_code == 410
    finally:
        subprocess.run(
            [HYCLOUD, "admin", "enable-user", carol.name, *table], env=admin, check=True, timeout=60
        )
    assert _anonymous(share["url"]).content == b"carol's"


def test_a_read_only_key_cannot_share(carol, deployment, tmp_path):
    """A link gives the file to anyone: making one needs a key that may change the owner's files."""
    (tmp_path / "r.txt").write_bytes(b"read only")
    carol.cli("put", str(tmp_path / "r.txt"), "/r.txt")
    admin = {**os.environ, **deployment.env}
    made = subprocess.run(
        [
            HYCLOUD,
            "--json",
            "admin",
            "add-key",
            carol.name,
            "--read-only",
            "--table",
            deployment.outputs["TableName"],
        ],
        env=admin,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    reader = ApiSession(deployment.api_url, json.loads(made.stdout)["api_key"])
    refused = reader.call("POST", "/v1/shares", json={"path": "/r.txt"})
    assert refused.status_code == 403 and refused.json()["error"]["code"] == "read-only-key"
    assert reader.call("GET", "/v1/shares").status_code == 200
