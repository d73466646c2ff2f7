"""Erasure-coded large files across the deployed instances (docs/GEO.md): blocks where the ring
says, byte-exact downloads from several instances, degraded reads, measurements and plans."""

from __future__ import annotations

import hashlib
import io
import json
import os
import time

import pytest
import requests

from hycloud.transfer.coded import plan_queues, setup_seconds
from hycloud_core import content, paths
from hycloud_core.codec.erasure import encode_stream
from hycloud_core.codec.layout import CodedLayout, block_key
from hycloud_core.coded.sweep import version_blocks
from hycloud_core.merkle.hashing import file_hash
from hycloud_core.placement.ring import HashRing
from hycloud_core.store.version_records import VersionRecords
from infra.local import deploy as local
from tests.e2e.conftest import _make_user
from tests.e2e.invariants import records
from tests.e2e.operator_jobs import run_operator_job

MiB = 1024 * 1024
CLOSED = "http://127.0.0.1:9"  # nothing listens there: the instance is unreachable


def _expected_blocks(data: bytes, regions: list[str]) -> list[list[tuple[str, str, bytes]]]:
    """Per chunk, (region, block sha256, block bytes) as RS(3,2) and the ring place them."""
    ring = HashRing(regions)
    out = []
    for chunk in encode_stream(io.BytesIO(data), 3, 2, 2 * MiB):
        homes = ring.place(chunk.key, 3)
        out.append([(r, hashlib.sha256(b).hexdigest(), b) for r, b in zip(homes, chunk.blocks, strict=True)])
    return out


@pytest.fixture(scope="module")
def coded_file(deployment, instances, alice, tmp_path_factory):
    """A 5 MiB + 1234 byte file (three chunks, the last short) uploaded coded through the CLI."""
    src = tmp_path_factory.mktemp("geo") / "big.bin"
    src.write_bytes(os.urandom(5 * MiB + 1234))
    result = json.loads(alice.cli("--json", "put", "-p", "--coded", str(src), "/geo/coded/big.bin").stdout)
    return src, result


def test_coded_upload_places_each_block_where_the_ring_says(deployment, instances, alice, coded_file):
    src, result = coded_file
    data = src.read_bytes()
    assert result["coded"] == {"n": 3, "k": 2} and result["content_hash"] == content.hash_bytes(data)
    expected = _expected_blocks(data, list(instances))
    assert len(expected) == 3
    used = set()
    for chunk in expected:
        for region, digest, block in chunk:
            body = deployment.client("s3", region).get_object(
                Bucket=instances[region]["BucketName"], Key=block_key(digest)
            )
            assert body["Body"].read() == block
            used.add(region)
            for other in instances:  # nowhere else
                if other != region:
                    listed = deployment.client("s3", other).list_objects_v2(
                        Bucket=instances[other]["BucketName"], Prefix=block_key(digest)
                    )
                    assert listed.get("KeyCount", 0) == 0
    assert used == set(instances)  # every instance holds blocks of this file
    link = json.loads((alice.ns_dir() / "geo" / "coded" / "big.bin").read_bytes())
    layout = link["erasure"]
    assert (layout["n"], layout["k"], layout["chunk_size"]) == (3, 2, 2 * MiB)
    assert [[(b["instance"], b["hash"]) for b in c["blocks"]] for c in layout["chunks"]] == [
        [(r, h) for r, h, _ in chunk] for chunk in expected
    ]
    hashes = [bytes.fromhex(h) for chunk in expected for _, h, _ in chunk]
    assert layout["merkle"] == file_hash(bytes.fromhex(result["content_hash"]), hashes).hex()


def test_ranged_reads_of_a_coded_file_decode_only_the_chunks_they_need(alice, coded_file):
    src, _ = coded_file
    data = src.read_bytes()
    with alice.sdk().open("/geo/coded/big.bin", "rb") as f:
        f.seek(2 * MiB - 100)  # across the first chunk boundary
        assert f.read(300) == data[2 * MiB - 100 : 2 * MiB + 200]
        f.seek(-50, os.SEEK_END)
        assert f.read() == data[-50:]
        f.seek(0)
        assert f.read() == data  # in order to the end: the content hash is checked too


def prefer(user, regions, region: str) -> None:
    """Measured latencies that make `region` the user's optimal instance: five round trips per
    instance (an instance's latency is the lowest of its last five), `region`'s the shortest."""
    samples = [
        {"instance": r, "bytes": MiB, "seconds": 0.1, "rtt_ms": 5.0 if r == region else 80.0, "kind": "probe"}
        for r in regions
        for _ in range(5)
    ]
    answer = user.api().call("POST", "/v1/measurements", json={"samples": samples})
    assert answer.status_code == 200 and answer.json()["optimal"] == region, answer.text


def measured_fastest(user, regions, region: str) -> None:
    """Downloads that measured `region` 20 times as fast as the others (download samples rank
    before the upload's and the probes' in the estimates the planner uses)."""
    samples = [
        {"instance": r, "bytes": MiB, "seconds": 0.005 if r == region else 0.1, "kind": "download"}
        for r in regions
        for _ in range(5)
    ]
    answer = user.api().call("POST", "/v1/measurements", json={"samples": samples})
    assert answer.status_code == 200, answer.text


def _run_of(deployment, machine: str, job: str) -> dict:
    arn = machine.replace(":stateMachine:", ":execution:") + f":{job}"
    region = arn.split(":")[3]
    found = deployment.client("stepfunctions", region).describe_execution(executionArn=arn)
    return {**found, "output": json.loads(found.get("output") or "{}")}


def _relayed_bytes(deployment) -> int:
    item = deployment.client("dynamodb").get_item(
        TableName=deployment.outputs["TableName"], Key={"pk": {"S": "STATS#relay"}, "sk": {"S": "STATS"}}
    )
    return int(item.get("Item", {}).get("bytes", {}).get("N", 0))


def test_relay_job_rebuilds_a_coded_file_into_its_cache(deployment, instances, tmp_path):
    """A user whose optimal instance is home: the job runs there, the file lands in its cache."""
    user = _make_user(deployment, "near")
    data = os.urandom(5 * MiB + 1234)
    (tmp_path / "src.bin").write_bytes(data)
    user.sdk().put(tmp_path / "src.bin", "/near.bin", coded=True)
    prefer(user, instances, list(instances)[0])
    user.cli("get", "--via", "relay", "/near.bin", str(tmp_path / "relayed.bin"))
    assert (tmp_path / "relayed.bin").read_bytes() == data
    cached = deployment.efs_root() / "cache" / paths.cache_name(user.id, "/near.bin")
    assert cached.read_bytes() == data  # decoded from k blocks per chunk by the job
    job = user.api().call("GET", "/v1/relay", params={"path": "/near.bin"}).json()["job"]
    told = _run_of(deployment, deployment.outputs["RelayStateMachineArn"], job)["input"]
    assert '"erasure_ref"' in told and len(told) < 4096  # the layout by name, whatever its size


def test_a_coded_files_relay_runs_at_the_users_optimal_instance(deployment, instances, tmp_path):
    """Seed 000 §III-B: the relay job at the optimal (data) instance rebuilds the file from k blocks
    per chunk, its own first, into that instance's EFS cache and bucket; the client reads it there."""
    user = _make_user(deployment, "far")
    far = list(instances)[2]
    data = os.urandom(5 * MiB + 77)  # three chunks: one block of each is at every instance
    (tmp_path / "src.bin").write_bytes(data)
    sdk = user.sdk()
    sdk.put(tmp_path / "src.bin", "/far.bin", coded=True)
    prefer(user, instances, far)
    metered = _relayed_bytes(deployment)
    sdk.get("/far.bin", tmp_path / "back.bin", via="relay")
    assert (tmp_path / "back.bin").read_bytes() == data
    assert sdk.last_transfer["mode"] == "relay" and sdk.last_transfer["instance"] == far
    assert _relayed_bytes(deployment) - metered >= len(data)  # the run is metered in the home table

    status = user.api().call("GET", "/v1/relay", params={"path": "/far.bin"}).json()
    assert status["state"] == "ready" and status["instance"] == far and "url" in status
    run = _run_of(deployment, instances[far]["RelayStateMachineArn"], status["job"])
    assert run["status"] == "SUCCEEDED" and run["output"]["fetch"]["instance"] == far
    assert run["output"]["fetch"]["blocks_from"][far] == 3  # every chunk's own block first
    assert sum(run["output"]["fetch"]["blocks_from"].values()) == 6  # k = 2 blocks per chunk
    name, digest = paths.cache_name(user.id, "/far.bin"), content.hash_bytes(data)
    cache = deployment.efs_root(instances[far]["AccessPointId"]) / "cache"
    assert (cache / name).read_bytes() == data  # the data instance's own EFS cache
    assert not (deployment.efs_root() / "cache" / name).exists()  # nothing relayed at home
    body = deployment.client("s3", far).get_object(Bucket=instances[far]["BucketName"], Key=f"relay/{digest}")
    assert hashlib.sha256(body["Body"].read()).digest() == hashlib.sha256(data).digest()

    again = user.api().call("POST", "/v1/relay", json={"path": "/far.bin"}).json()
    assert again["state"] == "ready" and again["job"] == status["job"]  # served, not run twice
    assert (
        user.api()
        .call("GET", "/v1/relay/data", params={"path": "/far.bin", "offset": 0, "length": 10})
        .status_code
        == 409
    )


def test_a_relay_at_a_data_instance_runs_again_once_its_copy_expired(deployment, instances, tmp_path):
    user = _make_user(deployment, "expired")
    far = list(instances)[1]
    data = os.urandom(2 * MiB + 5)
    (tmp_path / "src.bin").write_bytes(data)
    sdk = user.sdk()
    sdk.put(tmp_path / "src.bin", "/x.bin", coded=True)
    prefer(user, instances, far)
    sdk.get("/x.bin", tmp_path / "one.bin", via="relay")
    first = user.api().call("GET", "/v1/relay", params={"path": "/x.bin"}).json()["job"]
    deployment.client("s3", far).delete_object(  # the bucket's lifecycle rule forgot it (after a day)
        Bucket=instances[far]["BucketName"], Key=f"relay/{content.hash_bytes(data)}"
    )
    assert user.api().call("GET", "/v1/relay", params={"path": "/x.bin"}).json()["state"] == "absent"
    sdk.get("/x.bin", tmp_path / "two.bin", via="relay")
    assert (tmp_path / "two.bin").read_bytes() == data
    second = user.api().call("GET", "/v1/relay", params={"path": "/x.bin"}).json()
    assert second["job"] != first and second["instance"] == far
    fetch = _run_of(deployment, instances[far]["RelayStateMachineArn"], second["job"])["output"]["fetch"]
    assert fetch["hit"] is True and fetch["published"] == f"relay/{content.hash_bytes(data)}"  # from EFS


@pytest.mark.parametrize("base_coded", [True, False], ids=["coded-base", "plain-base"])
def test_a_coded_files_delta_is_computed_at_the_users_optimal_instance(
    deployment, instances, tmp_path, base_coded
):
    """Both kinds of delta download: the job at the optimal instance rebuilds the new version from
    its blocks (and a coded base too; a plain base is read from the home bucket), and leaves the
    delta in its own bucket, which the client reads by presigned URL."""
    user = _make_user(deployment, "fardelta")
    far = list(instances)[1]
    old = os.urandom(4 * MiB + 5)
    new = old[:MiB] + os.urandom(1000) + old[MiB + 1000 :]
    sdk = user.sdk()
    (tmp_path / "v1.bin").write_bytes(old)
    sdk.put(tmp_path / "v1.bin", "/d.bin", coded=base_coded)
    (tmp_path / "v2.bin").write_bytes(new)
    sdk.put(tmp_path / "v2.bin", "/d.bin", coded=True)
    prefer(user, instances, far)

    mine = tmp_path / "mine.bin"
    for mode, kind in (("rsync", "rsync"), ("auto", "version")):
        mine.write_bytes(old)
        sdk.get("/d.bin", mine, via="delta", base=tmp_path / "v1.bin", delta_mode=mode)
        assert mine.read_bytes() == new
        done = sdk.last_transfer
        assert done["mode"] == "delta" and done["kind"] == kind and done["instance"] == far, done
        assert done["received_bytes"] < len(new) // 4
    listed = deployment.client("s3", far).list_objects_v2(
        Bucket=instances[far]["BucketName"], Prefix="staging/"
    )
    keys = [o["Key"] for o in listed.get("Contents", [])]
    assert not [k for k in keys if k.startswith(f"staging/{user.ns_key}/")]  # the checksum list, unstaged


def test_delta_job_rebuilds_a_coded_file_before_computing_the_delta(deployment, tmp_path):
    sdk = _make_user(deployment, "cdelta").sdk()
    old = os.urandom(4 * MiB + 5)
    new = old[:MiB] + os.urandom(1000) + old[MiB + 1000 :]
    for version in (old, new):
        (tmp_path / "src.bin").write_bytes(version)
        sdk.put(tmp_path / "src.bin", "/d.bin", coded=True)
    mine = tmp_path / "mine.bin"
    mine.write_bytes(old)
    sdk.get("/d.bin", mine, via="delta")
    assert mine.read_bytes() == new
    assert sdk.last_transfer["mode"] == "delta" and sdk.last_transfer["received_bytes"] < len(new) // 4


def test_coded_file_downloads_byte_exact_from_every_instance(alice, coded_file, tmp_path):
    src, _ = coded_file
    out = json.loads(alice.cli("--json", "get", "/geo/coded/big.bin", str(tmp_path / "back.bin")).stdout)
    assert (tmp_path / "back.bin").read_bytes() == src.read_bytes()
    assert out["mode"] == "coded" and out["unreachable"] == []
    served = {r: s["blocks"] for r, s in out["per_instance"].items()}
    assert sum(served.values()) == 3 * 2  # k blocks per chunk, no more
    assert sum(1 for n in served.values() if n) >= 2  # from several instances at once


@pytest.mark.parametrize("way", ["closed-port", "blocks-deleted"])
def test_download_survives_one_lost_instance(deployment, instances, tmp_path, way):
    """RS(3,2) tolerates n - k = 1 lost instance: its blocks come from the two others. The lost
    one is the instance this user measured fastest, so every chunk's plan counts on it."""
    user = _make_user(deployment, f"lost-{way}")
    lost = sorted(instances)[0]
    sdk = user.sdk()
    src = tmp_path / "src.bin"
    src.write_bytes(os.urandom(4 * MiB + 77))
    sdk.put(src, f"/geo/degraded-{way}.bin", parents=True, coded=True)
    measured_fastest(user, list(instances), lost)
    answer = sdk.http.json("GET", "/v1/plan", params={"path": f"/geo/degraded-{way}.bin"})
    queues, _ = plan_queues(
        CodedLayout.from_dict(answer["layout"]), answer["estimates"], setup_seconds(answer["latencies_ms"])
    )
    assert len(queues[lost]) == len(answer["layout"]["chunks"]), (
        answer["estimates"],
        answer["latencies_ms"],
        queues,
    )  # the plan counts on it for every chunk
    if way == "closed-port":
        sdk.instance_endpoints = {lost: CLOSED}
    else:
        for chunk in _expected_blocks(src.read_bytes(), list(instances)):
            for region, digest, _ in chunk:
                if region == lost:
                    deployment.client("s3", region).delete_object(
                        Bucket=instances[region]["BucketName"], Key=block_key(digest)
                    )
    sdk.get(f"/geo/degraded-{way}.bin", tmp_path / "back.bin")
    assert (tmp_path / "back.bin").read_bytes() == src.read_bytes()
    stats = sdk.last_transfer["per_instance"]
    assert stats[lost]["blocks"] == 0
    assert sum(s["blocks"] for s in stats.values()) == 2 * 3
    assert stats[lost]["asked"] >= 1  # planned there, then served by the others


def test_a_slow_instance_loses_its_blocks_to_the_others(deployment, instances, alice, tmp_path):
    """One instance behind a 1 Mbit/s link: a 1 MiB block there takes 8 s, the others' well under
    one. Its queued and stuck blocks move to the other holders; the download ends without it."""
    from urllib.parse import urlsplit

    from bench.wan import WanLink, session_through

    sdk = alice.sdk()
    src = tmp_path / "src.bin"
    src.write_bytes(os.urandom(8 * MiB))
    sdk.put(src, "/geo/slow.bin", parents=True, coded=True)
    slow = list(instances)[2]
    port = urlsplit(deployment.env["AWS_ENDPOINT_URL"]).port
    with WanLink(("127.0.0.1", port), down_mbps=1, up_mbps=None, rtt_ms=0, max_seconds=120) as link:
        through = session_through(link)
        sdk.instance_sessions = lambda region: through if region == slow else requests.Session()
        sdk.get("/geo/slow.bin", tmp_path / "back.bin")
    assert (tmp_path / "back.bin").read_bytes() == src.read_bytes()
    result = sdk.last_transfer
    assert result["per_instance"][slow]["blocks"] == 0  # every block it was planned for moved
    assert result["moved_blocks"] >= 1
    assert sum(s["blocks"] for s in result["per_instance"].values()) == 2 * 4


def test_two_lost_instances_fail_cleanly(instances, alice, coded_file, tmp_path):
    sdk = alice.sdk()
    sdk.instance_endpoints = {r: CLOSED for r in list(instances)[1:]}
    with pytest.raises(sdk.HyCloudError) as err:
        sdk.get("/geo/coded/big.bin", tmp_path / "back.bin")
    assert err.value.code == "download-failed"
    assert not (tmp_path / "back.bin").exists()


def test_downloads_report_measurements_that_plans_use(deployment, instances, bob, tmp_path):
    sdk = bob.sdk()
    src = tmp_path / "src.bin"
    src.write_bytes(os.urandom(4 * MiB))
    sdk.put(src, "/m.bin", coded=True)
    before = sdk.http.json("GET", "/v1/plan", params={"path": "/m.bin"})
    assert set(before["estimates"]) == set(instances) and before["optimal"] is None
    assert before["measured_by"] == {r: "upload" for r in instances}  # the upload gave each a figure
    assert all(rate > 0 for rate in before["estimates"].values())
    sdk.get("/m.bin", tmp_path / "back.bin")
    reported = {s["instance"]: s for s in sdk.last_transfer["samples"]}
    plan = sdk.http.json("GET", "/v1/plan", params={"path": "/m.bin"})
    for region, sample in reported.items():  # one sample each: the estimate is that rate
        assert plan["estimates"][region] == pytest.approx(sample["bytes"] / sample["seconds"], rel=0.01)
    assert plan["optimal"] in reported and plan["optimal"] == plan["service_instances"][0]
    lowest = min(plan["latencies_ms"].values())
    assert all(plan["latencies_ms"][r] <= lowest * 1.1 for r in plan["service_instances"])
    item = deployment.client("dynamodb").get_item(
        TableName=deployment.outputs["TableName"],
        Key={"pk": {"S": f"BW#{bob.ns_key}"}, "sk": {"S": next(iter(reported))}},
    )
    assert len(item["Item"]["links"]["M"]["d"]["M"]["samples"]["L"]) == 1


def test_instances_never_measured_are_probed_before_planning(deployment, instances, tmp_path):
    user = _make_user(deployment, "probe")
    sdk, table = user.sdk(), deployment.client("dynamodb")
    src = tmp_path / "src.bin"
    src.write_bytes(os.urandom(2 * MiB + 1))
    sdk.put(src, "/p.bin", coded=True)
    for region in instances:  # forget the upload's figures: no transfer measured any instance
        table.delete_item(
            TableName=deployment.outputs["TableName"],
            Key={"pk": {"S": f"BW#{user.ns_key}"}, "sk": {"S": region}},
        )
    plan = sdk.http.json("GET", "/v1/plan", params={"path": "/p.bin"})
    assert plan["estimates"] == {r: None for r in instances}
    sdk.get("/p.bin", tmp_path / "back.bin")
    assert (tmp_path / "back.bin").read_bytes() == src.read_bytes()
    assert sdk.last_transfer["probed"] == sorted(instances)
    for region in instances:
        item = table.get_item(
            TableName=deployment.outputs["TableName"],
            Key={"pk": {"S": f"BW#{user.ns_key}"}, "sk": {"S": region}},
        )["Item"]
        probe = item["links"]["M"]["d"]["M"]["probe"]["L"]
        assert int(probe[1]["N"]) > 0  # the probe's bytes/s, kept beside the download's samples
    sdk.get("/p.bin", tmp_path / "again.bin")  # measured now: no probe (a new local file: no delta)
    assert sdk.last_transfer["mode"] == "coded" and sdk.last_transfer["probed"] == []


def test_measurements_keep_the_harmonic_mean_of_the_last_five(instances, carol):
    api = carol.api()
    region = list(instances)[0]
    rates = [1e6, 2e6, 4e6, 8e6, 16e6, 32e6]  # six transfers of 1 MB: the first drops out
    for rate in rates:
        r = api.call(
            "POST",
            "/v1/measurements",
            json={"samples": [{"instance": region, "bytes": 10**6, "seconds": 1e6 / rate}]},
        )
        assert r.status_code == 200, r.text
    kept = rates[1:]
    assert r.json()["estimates"][region] == pytest.approx(len(kept) / sum(1 / x for x in kept), rel=1e-3)


@pytest.mark.parametrize(
    "body, code",
    [
        ({"samples": [{"instance": "mars-1", "bytes": 1, "seconds": 1.0}]}, "unknown-instance"),
        ({"samples": [{"instance": "us-east-1", "bytes": 0, "seconds": 1.0}]}, None),
        ({"samples": []}, None),
    ],
)
def test_bad_measurements_are_refused(instances, alice, body, code):
    r = alice.api().call("POST", "/v1/measurements", json=body)
    assert r.status_code == 400, r.text
    if code:
        assert r.json()["error"]["code"] == code


def _upload_body(n: int, k: int, size: int = 3 * MiB) -> dict:
    data = os.urandom(size)
    chunks = [
        {
            "length": c.length,
            "key": c.key,
            "blocks": [{"hash": hashlib.sha256(b).hexdigest(), "size": len(b)} for b in c.blocks],
        }
        for c in encode_stream(io.BytesIO(data), n, k, 2 * MiB)
    ]
    return {
        "path": "/bad.bin",
        "size": size,
        "content_hash": content.hash_bytes(data),
        "layout": {"n": n, "k": k, "chunk_size": 2 * MiB, "chunks": chunks},
    }


@pytest.mark.parametrize(
    "change, code",
    [
        (lambda b: b, None),  # fine as it is: 200
        (lambda b: _upload_body(4, 2), "bad-code"),  # more blocks than instances
        (lambda b: _upload_body(3, 1), "bad-code"),  # k = 1 only means replication below three
        (lambda b: {**b, "size": b["size"] + 1}, "bad-layout"),
        (lambda b: {**b, "layout": {**b["layout"], "chunk_size": 1 * MiB}}, "bad-layout"),
    ],
)
def test_coded_upload_checks_the_layout(instances, alice, change, code):
    r = alice.api().call("POST", "/v1/coded/uploads", json=change(_upload_body(3, 2)))
    if code is None:
        assert r.status_code == 200 and len(r.json()["urls"]) == 2 * 3
    else:
        assert r.status_code == 400 and r.json()["error"]["code"] == code, r.text


@pytest.mark.parametrize("path", ["/geo", "/geo/coded", "/no/such/file", "/small.txt"])
def test_plan_of_anything_but_a_coded_file_is_404(instances, alice, coded_file, path):
    alice.sdk().put_bytes("/small.txt", b"tiny")
    r = alice.api().call("GET", "/v1/plan", params={"path": path})
    assert r.status_code == 404, r.text


def test_commit_refuses_blocks_never_uploaded(instances, alice):
    body = _upload_body(3, 2)
    r = alice.api().call("POST", "/v1/coded/commit", json=body)
    assert r.status_code == 409 and r.json()["error"]["code"] == "blocks-missing"
    assert alice.api().call("GET", "/v1/stat", params={"path": "/bad.bin"}).status_code == 404


def _repair(api, region: str) -> dict:
    started = api.call("POST", "/v1/coded/repair", json={"region": region})
    assert started.status_code == 202, started.text
    job = started.json()["job"]
    for _ in range(300):
        status = api.call("GET", "/v1/coded/repair", params={"job": job}).json()
        if status["state"] not in ("running", "queued"):  # a job may wait its turn in the queue
            return status
        time.sleep(0.2)
    raise AssertionError("repair job did not finish")


def test_repair_job_rebuilds_a_lost_instances_blocks_byte_exact(deployment, instances, dave, tmp_path):
    sdk, api = dave.sdk(), dave.api()
    src = tmp_path / "src.bin"
    src.write_bytes(os.urandom(6 * MiB + 5))
    sdk.put(src, "/r.bin", coded=True)
    lost = list(instances)[1]
    s3, bucket = deployment.client("s3", lost), instances[lost]["BucketName"]
    theirs = [
        (d, b)
        for chunk in _expected_blocks(src.read_bytes(), list(instances))
        for r, d, b in chunk
        if r == lost
    ]
    assert theirs
    for digest, _ in theirs:
        s3.delete_object(Bucket=bucket, Key=block_key(digest))
    status = _repair(api, lost)
    assert status["state"] == "succeeded", status
    assert status["result"]["rebuilt"] == len(theirs) and status["result"]["unrecoverable"] == 0
    for digest, block in theirs:
        assert s3.get_object(Bucket=bucket, Key=block_key(digest))["Body"].read() == block
    again = _repair(api, lost)  # nothing left to do: every block checked, none rebuilt
    assert again["result"]["rebuilt"] == 0 and again["result"]["checked"] == len(theirs)
    sdk.instance_endpoints = {r: CLOSED for r in instances if r != lost}  # lost + one other: k = 2
    sdk.instance_endpoints.pop(list(instances)[0])
    sdk.get("/r.bin", tmp_path / "back.bin")
    assert (tmp_path / "back.bin").read_bytes() == src.read_bytes()


@pytest.mark.exclusive
def test_whole_instance_repair_rebuilds_every_users_blocks(deployment, instances, tmp_path):
    """The operator's job (no user), queued through the dispatcher: every user's blocks on a lost
    instance, in one run."""
    users, lost = [_make_user(deployment, "fleet") for _ in range(2)], list(instances)[2]
    s3, bucket = deployment.client("s3", lost), instances[lost]["BucketName"]
    theirs, files = [], {}
    for user in users:
        data = os.urandom(2 * MiB + 333)
        (tmp_path / "src.bin").write_bytes(data)
        user.sdk().put(tmp_path / "src.bin", "/fleet.bin", coded=True)
        files[user.name] = data
        theirs += [
            (d, b) for chunk in _expected_blocks(data, list(instances)) for r, d, b in chunk if r == lost
        ]
    assert theirs
    for digest, _ in theirs:
        s3.delete_object(Bucket=bucket, Key=block_key(digest))
    crossed = users[0].api().call("GET", "/v1/usage").json()["inter_region"]["bytes"]
    status = run_operator_job(deployment, local.instances()[list(instances)[0]], {"region": lost})
    assert status["status"] == "SUCCEEDED", status
    result = json.loads(status["output"])
    assert result["rebuilt"] >= len(theirs) and result["unrecoverable"] == 0 and "user" not in result
    for digest, block in theirs:
        assert s3.get_object(Bucket=bucket, Key=block_key(digest))["Body"].read() == block
    for user in users:
        user.sdk().get("/fleet.bin", tmp_path / "back.bin")
        assert (tmp_path / "back.bin").read_bytes() == files[user.name]
    priced = users[0].api().call("GET", "/v1/usage").json()["inter_region"]
    # each rebuilt block was written across regions (the job runs at home), its sources read too
    assert priced["bytes"] - crossed >= sum(len(b) for _, b in theirs) and priced["usd"] > 0


@pytest.mark.parametrize(
    "call, status, code",
    [
        (("POST", "/v1/coded/repair", {"json": {"region": "mars-1"}}), 400, "unknown-instance"),
        (("GET", "/v1/coded/repair", {"params": {"job": "0" * 32}}), 404, "no-such-job"),
        (("GET", "/v1/coded/repair", {"params": {"job": "../x"}}), 400, None),
    ],
)
def test_bad_repair_requests_are_refused(instances, alice, call, status, code):
    method, route, kwargs = call
    r = alice.api().call(method, route, **kwargs)
    assert r.status_code == status, r.text
    if code:
        assert r.json()["error"]["code"] == code


def _sweep(deployment, instances) -> dict:
    lam = deployment.client("lambda")
    name = local.instances()[list(instances)[0]]["RepairStepFunctionName"]
    answer = lam.invoke(FunctionName=name, Payload=json.dumps({"action": "sweep", "grace_s": 0}).encode())
    result = json.loads(answer["Payload"].read())
    assert "FunctionError" not in answer, result
    return result


def _stored(deployment, instances, blocks) -> set[str]:
    """The block hashes of `blocks` ((region, hash, bytes)) still in their region's bucket."""
    kept = set()
    for region, digest, _ in blocks:
        listed = deployment.client("s3", region).list_objects_v2(
            Bucket=instances[region]["BucketName"], Prefix=block_key(digest)
        )
        kept |= {digest} if listed.get("KeyCount", 0) else set()
    return kept


@pytest.mark.exclusive
def test_dedup_and_reclamation_across_instances_leave_no_orphan_block(
    deployment, instances, alice, bob, tmp_path
):
    src = tmp_path / "twin.bin"
    src.write_bytes(os.urandom(4 * MiB + 9))
    blocks = [b for chunk in _expected_blocks(src.read_bytes(), list(instances)) for b in chunk]
    first = alice.sdk().put(src, "/twin-a.bin", coded=True)
    second = bob.sdk().put(src, "/twin-b.bin", coded=True)  # another user, same bytes
    assert first["sent_bytes"] == sum(len(b) for _, _, b in blocks) and second["sent_bytes"] == 0
    alice.sdk().rm("/twin-a.bin")
    _sweep(deployment, instances)
    assert _stored(deployment, instances, blocks) == {d for _, d, _ in blocks}  # bob still links them
    bob.sdk().get("/twin-b.bin", tmp_path / "back.bin")
    assert (tmp_path / "back.bin").read_bytes() == src.read_bytes()
    bob.sdk().rm("/twin-b.bin")
    _sweep(deployment, instances)  # both files are in their owners' trash: restorable, blocks kept
    assert _stored(deployment, instances, blocks) == {d for _, d, _ in blocks}
    bob.sdk().trash_restore(_trashed(bob, "/twin-b.bin"))
    bob.sdk().get("/twin-b.bin", tmp_path / "restored.bin")
    assert (tmp_path / "restored.bin").read_bytes() == src.read_bytes()
    bob.sdk().rm("/twin-b.bin")
    for user, path in ((alice, "/twin-a.bin"), (bob, "/twin-b.bin")):
        user.sdk().trash_empty(_trashed(user, path))
    _sweep(deployment, instances)  # the versions `rm` kept still name them: restorable, kept
    assert _stored(deployment, instances, blocks) == {d for _, d, _ in blocks}
    for user in (alice, bob):  # as upkeep drops them once the retention has passed
        kept = VersionRecords(records(deployment).table, user.id)
        kept.delete([v for v in kept.all() if v.path.startswith("/twin-")])
    result = _sweep(deployment, instances)
    assert _stored(deployment, instances, blocks) == set()
    assert sum(result["deleted"].values()) >= len(blocks)
    # every block left in any bucket is named by some link file (a retained version's, a trashed or
    # snapshotted file's too) or a kept version's record: no orphans
    linked, efs = set(), deployment.efs_root()
    for path in [p for area in ("ns", "trash", "snapshots") for p in efs.joinpath(area).rglob("*")]:
        if path.is_file() and path.stat().st_mode & 0o1000:
            doc = json.loads(path.read_bytes())
            layouts = [doc.get("erasure") or {}, *doc.get("history_erasure", {}).values()]
            linked |= {b["hash"] for layout in layouts for c in layout.get("chunks", []) for b in c["blocks"]}
    linked |= version_blocks(records(deployment).table, time.time())  # and the kept versions' records
    for region, out in instances.items():
        listed = deployment.client("s3", region).list_objects_v2(Bucket=out["BucketName"], Prefix="blocks/")
        assert {o["Key"][len("blocks/") :] for o in listed.get("Contents", [])} <= linked


def _trashed(user, path: str) -> str:
    """The newest trash item of `path`."""
    return next(i["item"] for i in user.sdk().trash()["items"] if i["path"] == path)


def _body_of(data: bytes, path: str) -> dict:
    """An upload body that names the blocks of `data`: what someone knowing only hashes can send."""
    chunks = [
        {
            "length": c.length,
            "key": c.key,
            "blocks": [{"hash": hashlib.sha256(b).hexdigest(), "size": len(b)} for b in c.blocks],
        }
        for c in encode_stream(io.BytesIO(data), 3, 2, 2 * MiB)
    ]
    layout = {"n": 3, "k": 2, "chunk_size": 2 * MiB, "chunks": chunks}
    return {"path": path, "size": len(data), "content_hash": content.hash_bytes(data), "layout": layout}


def test_dedup_of_blocks_needs_proof_of_possession(deployment, instances, tmp_path):
    owner, other = _make_user(deployment, "pop"), _make_user(deployment, "pop")
    src = tmp_path / "secret.bin"
    src.write_bytes(os.urandom(2 * MiB + 77))
    owner.sdk().put(src, "/secret.bin", coded=True)
    api, body = other.api(), _body_of(src.read_bytes(), "/stolen.bin")
    started = api.call("POST", "/v1/coded/uploads", json=body).json()
    assert started["urls"] == {} and len(started["challenge"]["ranges"]) == 4  # every block is stored
    r = api.call("POST", "/v1/coded/commit", json=body)  # hashes alone: no proof
    assert r.status_code == 400 and r.json()["error"]["code"] == "bad-proof", r.text
    r = api.call("POST", "/v1/coded/commit", json={**body, "proof": "0" * 64})  # one answer per challenge
    assert r.status_code == 409 and r.json()["error"]["code"] == "upload-required", r.text
    api.call("POST", "/v1/coded/uploads", json=body)
    r = api.call("POST", "/v1/coded/commit", json={**body, "proof": "0" * 64})
    assert r.status_code == 400 and r.json()["error"]["code"] == "bad-proof", r.text
    assert api.call("GET", "/v1/stat", params={"path": "/stolen.bin"}).status_code == 404
    kept = other.sdk().put(src, "/mine.bin", coded=True)  # holding the bytes: dedup, nothing sent
    assert kept["sent_bytes"] == 0
    other.sdk().get("/mine.bin", tmp_path / "back.bin")
    assert (tmp_path / "back.bin").read_bytes() == src.read_bytes()


def test_cost_report_counts_blocks_in_every_region(deployment, instances, tmp_path):
    carol = _make_user(deployment, "geo-cost")  # a user of its own: the shared ones hold other tests' files
    sdk = carol.sdk()
    src = tmp_path / "cost.bin"
    src.write_bytes(os.urandom(4 * MiB + 3))
    sdk.put(src, "/cost.bin", coded=True)
    expected: dict[str, int] = {}
    for chunk in _expected_blocks(src.read_bytes(), list(instances)):
        for region, _, block in chunk:
            expected[region] = expected.get(region, 0) + len(block)
    report = carol.api().call("GET", "/v1/usage").json()
    usage = report["usage"]
    assert usage["coded_files"] == 1 and usage["coded_region_bytes"] == expected
    assert usage["s3_bytes"] == sum(expected.values())  # n/k of the file: 1.5 × for RS(3,2)
    assert usage["s3_bytes"] == pytest.approx(1.5 * src.stat().st_size, rel=0.01)
    price = report["costs"]
    assert set(report["region_storage_costs"]) == set(expected) and price
    assert all(v > 0 for v in report["region_storage_costs"].values())
