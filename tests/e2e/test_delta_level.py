"""The zstd level a client asks for a version-aware delta download, against the deployed cloud: the
job runs at it (and says so), the client rebuilds exact bytes at any level, a higher level sends no
more bytes on text-like releases, and a level out of range is a 400 before any job."""

from __future__ import annotations

import pytest

from hycloud.transfer.delta import delta_download, delta_from_known
from hycloud_core import content
from hycloud_core.delta import level
from hycloud_core.errors import HyCloudError
from tests.e2e.conftest import _make_user

pytestmark = pytest.mark.e2e
PATH = "/level.bin"


@pytest.fixture(scope="module")
def release(deployment, tmp_path_factory):
    """Two text-like versions of a 6 MiB file with scattered edits, put one after the other."""
    user, tmp = _make_user(deployment, "zlevel"), tmp_path_factory.mktemp("level")
    old, new = level.probe_pair(6 * 1024 * 1024)
    sdk = user.sdk()
    for name, data in (("v1", old), ("v2", new)):
        (tmp / name).write_bytes(data)
        sdk.put(tmp / name, PATH, via="direct")
    return sdk, tmp, old, new


@pytest.mark.parametrize("bad", ["0", "20", "abc"])
def test_a_level_out_of_range_is_a_400(release, bad):
    sdk, _, old, _ = release
    body = {"path": PATH, "base_hash": content.hash_bytes(old)}
    with pytest.raises(HyCloudError) as refused:
        sdk.http.json("POST", "/v1/delta/download", params={"level": bad}, json=body)
    assert refused.value.status == 400 and "level" in str(refused.value)


def test_the_job_runs_at_the_asked_level_and_rebuilds_exact_bytes(release):
    sdk, tmp, old, new = release
    received = {}
    for lv in (3, 19):
        file, ran = delta_from_known(sdk.http, PATH, content.hash_bytes(old), level=lv)
        assert file["content_hash"] == content.hash_bytes(new) and ran is not None
        assert ran[1]["kind"] == "version" and ran[1]["level"] == lv
        target = tmp / f"out{lv}"
        traffic = delta_download(
            sdk.http, file, tmp / "v1", target, base_hash=content.hash_bytes(old), ran=ran
        )
        assert target.read_bytes() == new
        received[lv] = ran[1]["delta_size"]
        assert traffic["kind"] == "version"
    assert 0 < received[19] <= received[3] < len(new) // 10, received
