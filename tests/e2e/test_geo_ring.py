"""Ring changes (docs/GEO.md): a fourth instance joins the ring and leaves it again. The migration
job moves only the blocks the ring moves, every file stays byte-exact, no old copy remains. An upload
that spans the change commits where its blocks went (the next run moves them), unless an instance it
placed blocks on has left the ring (409 ring-changed)."""

from __future__ import annotations

import io
import json
import os

import pytest

from hycloud_core.codec.erasure import encode_stream
from hycloud_core.codec.layout import BLOCK_PREFIX
from hycloud_core.errors import HyCloudError
from hycloud_core.placement.ring import HashRing, migrate
from infra.local import deploy as local
from tests.e2e.conftest import _make_user
from tests.e2e.operator_jobs import run_operator_job

pytestmark = pytest.mark.exclusive  # see infra/local/run_tests.py
MiB = 1024 * 1024
FOURTH = local.SPARE_REGION


@pytest.fixture(scope="module")
def deployed(deployment) -> dict[str, dict[str, str]]:
    found = local.instances()
    if len(found) != 3:
        pytest.skip("the ring test starts from the three default instances")
    return found


def _described(outputs: dict[str, str]) -> dict[str, str]:
    return {
        "region": outputs["Region"],
        "bucket": outputs["BucketName"],
        "relayStateMachineArn": outputs["RelayStateMachineArn"],
        "deltaStateMachineArn": outputs["DeltaStateMachineArn"],
    }


def _migrate(deployment, deployed, data_instances: list[dict]) -> dict:
    """Run the migration job to a ring of the home and `data_instances`; its final output."""
    home = next(iter(deployed.values()))
    status = run_operator_job(deployment, home, {"action": "migrate", "instances": data_instances})
    assert status["status"] == "SUCCEEDED", status
    return json.loads(status["output"])


def _holdings(deployment, buckets: dict[str, str], hashes: set[str]) -> dict[str, set[str]]:
    """region -> which of `hashes` its bucket holds."""
    out = {}
    for region, bucket in buckets.items():
        s3 = deployment.client("s3", region)
        keys = [
            obj["Key"][len(BLOCK_PREFIX) :]
            for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=BLOCK_PREFIX)
            for obj in page.get("Contents", [])
        ]
        out[region] = hashes & set(keys)
    return out


def _placed(files: dict[str, bytes], homes) -> dict[str, set[str]]:
    """region -> block hashes, with `homes(chunk key)` naming each chunk's block instances."""
    import hashlib

    out: dict[str, set[str]] = {}
    for data in files.values():
        for chunk in encode_stream(io.BytesIO(data), 3, 2, 2 * MiB):
            for region, block in zip(homes(chunk.key), chunk.blocks, strict=True):
                out.setdefault(region, set()).add(hashlib.sha256(block).hexdigest())
    return out


def _commit_after(plain, change):
    """The SDK's request call, with `change()` run between a coded upload's blocks and its commit:
    an upload that spans a ring change."""

    def json(method, path, **kw):
        if path == "/v1/coded/commit":
            change()
        return plain(method, path, **kw)

    return json


def _moves(data: bytes, before: HashRing, after: HashRing) -> int:
    """Blocks of `data` the ring change moves."""
    return sum(
        old != new
        for chunk in encode_stream(io.BytesIO(data), 3, 2, 2 * MiB)
        for old, new in zip(
            before.place(chunk.key, 3),
            migrate(before.place(chunk.key, 3), after.place(chunk.key, 3)),
            strict=True,
        )
    )


def _moved_by(before: HashRing, after: HashRing, size: int) -> bytes:
    """Random content of which the ring change moves at least one block: a chunk's three
    instances stay the same about one time in four, so any given content may move nothing."""
    for _ in range(100):
        data = os.urandom(size)
        if _moves(data, before, after):
            return data
    raise AssertionError("the ring change moves no block of 100 random files")


def _all_byte_exact(sdk, files: dict[str, bytes], tmp_path) -> None:
    for path, data in files.items():
        back = tmp_path / "back.bin"
        sdk.get(path, back)
        assert back.read_bytes() == data, path


@pytest.mark.slow
def test_a_fourth_instance_joins_and_leaves_the_ring_moving_only_what_the_ring_moves(
    deployment, deployed, tmp_path
):
    user = _make_user(deployment, "ring")
    sdk = user.sdk()
    shared = os.urandom(4 * MiB + 11)
    files = {"/a.bin": shared, "/copy-of-a.bin": shared, "/b.bin": os.urandom(5 * MiB + 3)}
    for path, data in files.items():
        (tmp_path / "src.bin").write_bytes(data)
        sdk.put(tmp_path / "src.bin", path, coded=True)
    three, four = list(deployed), [*deployed, FOURTH]
    ring3, ring4 = HashRing(three), HashRing(four)
    before = _placed(files, lambda key: ring3.place(key, 3))
    after = _placed(files, lambda key: migrate(ring3.place(key, 3), ring4.place(key, 3)))
    hashes = set().union(*before.values())
    fourth = local.add_instance(FOURTH)  # deployed once per local cloud; not on the ring yet
    buckets = {**{r: o["BucketName"] for r, o in deployed.items()}, FOURTH: fourth["bucket"]}
    assert _holdings(deployment, buckets, hashes) == {**before, FOURTH: set()}
    data_three = [_described(o) for o in list(deployed.values())[1:]]

    spanning = _moved_by(ring3, ring4, 3 * MiB + 7)  # started on three instances, committed on four
    (tmp_path / "src.bin").write_bytes(spanning)
    plain, result, left = sdk.http.json, {}, {}
    sdk.http.json = _commit_after(
        plain, lambda: result.update(_migrate(deployment, deployed, [*data_three, fourth]))
    )
    try:
        sdk.put(tmp_path / "src.bin", "/spanning.bin", coded=True)
        sdk.http.json = plain
        layout = user.api().call("GET", "/v1/plan", params={"path": "/spanning.bin"}).json()["layout"]
        assert layout["instances"] == sorted(three)  # committed where its blocks went
        _all_byte_exact(sdk, {"/spanning.bin": spanning}, tmp_path)
        again = _migrate(deployment, deployed, [*data_three, fourth])  # the next run moves it
        assert again["moved"] == _moves(spanning, ring3, ring4) > 0
        files["/spanning.bin"] = spanning
        moved = sum(len(after.get(r, set()) - before.get(r, set())) for r in four)
        assert 0 < moved < len(hashes) and result["moved"] >= moved
        assert _holdings(deployment, buckets, hashes) == {r: after.get(r, set()) for r in four}
        layout = user.api().call("GET", "/v1/plan", params={"path": "/b.bin"}).json()["layout"]
        assert layout["instances"] == sorted(four)
        _all_byte_exact(sdk, files, tmp_path)
        late = os.urandom(2 * MiB + 1)  # an upload after the change is placed by the new ring
        (tmp_path / "src.bin").write_bytes(late)
        sdk.put(tmp_path / "src.bin", "/late.bin", coded=True)
        late_blocks = _placed({"/late.bin": late}, lambda key: ring4.place(key, 3))
        assert all(
            late_blocks[r] <= held
            for r, held in _holdings(deployment, buckets, set().union(*late_blocks.values())).items()
            if r in late_blocks
        )
        leaving = os.urandom(2 * MiB + 5)  # started on four instances, committed after one left
        (tmp_path / "src.bin").write_bytes(leaving)
        sdk.http.json = _commit_after(plain, lambda: left.update(_migrate(deployment, deployed, data_three)))
        with pytest.raises(HyCloudError) as refused:
            sdk.put(tmp_path / "src.bin", "/leaving.bin", coded=True)
        assert refused.value.code == "ring-changed" and refused.value.status == 409
        assert user.api().call("GET", "/v1/stat", params={"path": "/leaving.bin"}).status_code == 404
    finally:
        sdk.http.json = plain
        back = left or _migrate(deployment, deployed, data_three)  # the fourth leaves the ring
    assert _holdings(deployment, buckets, hashes) == {**before, FOURTH: set()}
    late_back = _placed({"/late.bin": late}, lambda key: migrate(ring4.place(key, 3), ring3.place(key, 3)))
    late_hashes = set().union(*late_back.values())
    assert _holdings(deployment, buckets, late_hashes) == {r: late_back.get(r, set()) for r in four}
    assert back["moved"] >= moved
    _all_byte_exact(sdk, {**files, "/late.bin": late}, tmp_path)
