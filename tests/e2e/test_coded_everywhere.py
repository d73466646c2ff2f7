"""Coded files where a plain large file goes (docs/GEO.md): share links and the web app's download
get one URL of the file made whole, a delta upload patches a coded base, and a retained coded
version is a delta base and survives the block sweep."""

from __future__ import annotations

import hashlib
import json
import os

import pytest
import requests

from hycloud_core.constants import MiB
from tests.e2e.conftest import _make_user
from tests.e2e.test_geo import _expected_blocks, _stored, _sweep


@pytest.fixture(scope="module")
def user(deployment, instances):
    return _make_user(deployment, "everywhere")


def _put_coded(user, tmp_path, data: bytes, remote: str) -> dict:
    src = tmp_path / "src.bin"
    src.write_bytes(data)
    result = user.sdk().put(src, remote, coded=True)
    assert result["coded"] == {"n": 3, "k": 2}
    return result


def _link(user, remote: str) -> dict:
    return json.loads((user.ns_dir() / remote.lstrip("/")).read_bytes())


def test_share_link_serves_a_coded_file_byte_exact(deployment, user, tmp_path):
    data = os.urandom(5 * MiB + 77)
    result = _put_coded(user, tmp_path, data, "/shared.bin")
    share = json.loads(user.cli("--json", "share", "/shared.bin", "--expires", "1h").stdout)
    first = requests.get(share["url"], timeout=60, allow_redirects=False)
    assert first.status_code == 302 and "X-Amz-Signature" in first.headers["Location"]
    got = requests.get(share["url"], timeout=60)  # the second finds the file made whole already
    assert got.status_code == 200
    assert hashlib.sha256(got.content).hexdigest() == hashlib.sha256(data).hexdigest()
    whole = deployment.client("s3").head_object(
        Bucket=deployment.outputs["BucketName"], Key=f"shares/{result['content_hash']}"
    )
    assert whole["ContentLength"] == len(data)


def test_web_download_of_a_coded_file_is_one_url_of_the_whole(user, tmp_path):
    data = os.urandom(3 * MiB + 5)
    _put_coded(user, tmp_path, data, "/web.bin")
    api = user.api()
    link = api.call("GET", "/v1/files", params={"path": "/web.bin"}).json()
    assert "erasure" in link  # what sends the web app to /v1/coded/whole
    whole = api.call("GET", "/v1/coded/whole", params={"path": "/web.bin"}).json()
    assert whole["size"] == len(data)
    assert requests.get(whole["url"], timeout=60).content == data


@pytest.mark.parametrize("path", ["/no/such.bin", "/"])
def test_whole_of_anything_but_a_coded_file_is_404(user, path):
    r = user.api().call("GET", "/v1/coded/whole", params={"path": path})
    assert r.status_code == 404 and r.json()["error"]["code"] == "not-coded"


def test_delta_upload_onto_a_coded_base_commits_the_new_version_plain(deployment, instances, user, tmp_path):
    old = os.urandom(4 * MiB + 3)
    new = old[:MiB] + os.urandom(500) + old[MiB + 500 :]
    _put_coded(user, tmp_path, old, "/patched.bin")
    (tmp_path / "old.bin").write_bytes(old)
    (tmp_path / "new.bin").write_bytes(new)
    sdk = user.sdk()
    result = sdk.put(tmp_path / "new.bin", "/patched.bin", base=tmp_path / "old.bin", force_delta=True)
    assert sdk.last_transfer["mode"] == "delta" and result["sent_bytes"] < len(new) // 4
    link = _link(user, "/patched.bin")
    assert link["erasure"] is None and link["content_hash"] == result["content_hash"]
    old_hash = link["history"][0][0]
    assert set(link["history_erasure"]) == {old_hash}  # the coded base is kept with its layout
    sdk.get("/patched.bin", tmp_path / "back.bin")
    assert (tmp_path / "back.bin").read_bytes() == new


@pytest.mark.exclusive
def test_retained_coded_version_is_a_delta_base_and_survives_the_sweep(deployment, instances, user, tmp_path):
    old = os.urandom(4 * MiB + 11)
    new = old[: 2 * MiB] + os.urandom(700) + old[2 * MiB + 700 :]
    sdk = user.sdk()
    _put_coded(user, tmp_path, old, "/versions.bin")
    mine = tmp_path / "mine.bin"
    sdk.get("/versions.bin", mine)  # this client now knows it holds that version
    _put_coded(user, tmp_path, new, "/versions.bin")
    old_blocks = [b for chunk in _expected_blocks(old, list(instances)) for b in chunk]
    _sweep(deployment, instances)
    assert _stored(deployment, instances, old_blocks) == {d for _, d, _ in old_blocks}
    sdk.get("/versions.bin", mine, via="delta")
    assert mine.read_bytes() == new
    assert sdk.last_transfer["kind"] == "version" and sdk.last_transfer["received_bytes"] < len(new) // 4


@pytest.mark.slow
def test_files_above_the_deployments_threshold_are_coded_unless_told_not_to(deployment, user, tmp_path):
    threshold = user.sdk().info()["coded_threshold"]
    assert threshold == 64 * MiB  # three instances: the default is on
    src = tmp_path / "big.bin"
    src.write_bytes(os.urandom(threshold + 1))
    coded = json.loads(user.cli("--json", "put", str(src), "/default.bin").stdout)
    assert coded["coded"] == {"n": 3, "k": 2} and _link(user, "/default.bin")["erasure"]["k"] == 2
    plain = json.loads(user.cli("--json", "put", "--plain", str(src), "/plain.bin").stdout)
    assert "coded" not in plain and _link(user, "/plain.bin")["erasure"] is None
    key = f"objects/{plain['content_hash'][:2]}/{plain['content_hash']}"
    stored = deployment.client("s3").head_object(Bucket=deployment.outputs["BucketName"], Key=key)
    assert stored["ContentLength"] == threshold + 1
    for path in ("/default.bin", "/plain.bin"):  # later repair and migration jobs walk every coded file
        user.sdk().rm(path)


@pytest.mark.exclusive
def test_coded_versions_restore_byte_exact_after_the_file_is_gone_and_the_sweep_ran(
    deployment, instances, user, tmp_path
):
    """An overwritten and then removed coded file, its trash item emptied: only its version records
    name the two layouts now, and the sweep keeps their blocks while the versions are kept. Each
    version restores as a coded file (no S3 object is made) and reads back byte for byte."""
    first, second = os.urandom(4 * MiB + 11), os.urandom(4 * MiB + 5)
    sdk = user.sdk()
    hashes = [_put_coded(user, tmp_path, data, "/history.bin")["content_hash"] for data in (first, second)]
    sdk.rm("/history.bin")
    item = next(i["item"] for i in sdk.trash()["items"] if i["path"] == "/history.bin")
    sdk.trash_empty(item)
    _sweep(deployment, instances)
    kept = {v["content_hash"]: v["version"] for v in sdk.versions("/history.bin")["versions"]}
    assert set(hashes) <= set(kept)
    for data, content_hash in zip((first, second), hashes, strict=True):
        to = f"/restored-{content_hash[:8]}.bin"
        sdk.restore("/history.bin", version=kept[content_hash], to=to)
        assert _link(user, to)["erasure"]["k"] == 2
        sdk.get(to, tmp_path / "back.bin")
        assert (tmp_path / "back.bin").read_bytes() == data
        sdk.rm(to)
