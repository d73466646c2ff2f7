"""The delta and relay functions take the specs the controller sends (hycloud_core.jobs.specs),
read what they say, and refuse a malformed event before touching anything (under moto)."""

from __future__ import annotations

import json
import os

import boto3
import pytest

from hycloud_core import content
from hycloud_core.errors import BadRequestError
from hycloud_core.fs.relay_cache import RelayCache
from hycloud_core.jobs import base_cache_name, load_outcome, staging_file
from hycloud_core.jobs.specs import DeltaDownloadSpec, RelaySpec, SpecError
from tests.conftest import load_function

BUCKET, TABLE = "hycloud-content", "hycloud-test"
JOB = "dl-" + "1" * 40 + "-1"


@pytest.fixture
def efs(stores):
    return stores


def _cached(cache: RelayCache, name: str, data: bytes) -> str:
    os.makedirs(cache.dir, exist_ok=True)
    tmp = os.path.join(cache.dir, f".hc-tmp-{name}")
    with open(tmp, "wb") as f:
        f.write(data)
    digest = content.hash_bytes(data)
    cache.publish(name, tmp, digest)
    return digest


def test_the_delta_function_computes_what_its_spec_says(efs, lambda_context):
    """A version-aware delta job as the controller makes it: the delta lands in staging under
    the job's name and rebuilds the new version from the base."""
    delta = load_function("delta")
    cache = RelayCache(str(efs / "cache"))
    base_data = os.urandom(200_000)
    new_data = base_data[:100_000] + os.urandom(5_000) + base_data[100_000:]
    base = _cached(cache, base_cache_name(content.hash_bytes(base_data)), base_data)
    new = _cached(cache, "u#f", new_data)
    spec = DeltaDownloadSpec(
        level=3, cache_name="u#f", content_hash=new, base_hash=base, base_cache_name=base_cache_name(base)
    )
    event = {**spec.named(JOB).to_event(), "fetched": {"Payload": {"hit": False, "size": 10, "seconds": 2.0}}}
    answer = delta.handler(event, lambda_context)
    assert answer["job"] == JOB and answer["kind"] == "version" and answer["level"] == 3
    assert answer["s3_efs_rate"] == 5.0  # read from the workflow's fetch report
    produced = staging_file(str(efs / "staging"), JOB, "delta")
    assert os.path.getsize(produced) == answer["delta_size"] < len(new_data) // 4

    from hycloud_core.delta import versioned

    out = efs / "rebuilt"
    with open(cache.path(base_cache_name(base)), "rb") as b, open(produced, "rb") as d, open(out, "wb") as o:
        versioned.apply(b, d, o)
    assert out.read_bytes() == new_data
    # how it ended is kept beside it, as Step Functions would report it: the controller reads that
    # instead of describing the execution
    assert load_outcome(str(efs / "staging"), JOB) == {"status": "SUCCEEDED", "output": json.dumps(answer)}


@pytest.mark.parametrize(
    "event, names",
    [
        ({"action": "encode", "content_hash": "a" * 64, "job": JOB}, "cache_name"),
        (
            {"action": "encode", "cache_name": "u#f", "content_hash": "a" * 64, "base_hash": "b" * 64},
            "base_cache_name",
        ),
        ({"action": "apply", "cache_name": "u#f", "content_hash": "a" * 64, "job": JOB}, "user"),
        ({"action": "encode", "cache_name": "u#f", "content_hash": "a" * 64}, "job"),
        ({"action": "explode", "cache_name": "u#f"}, "action"),
    ],
)
def test_the_delta_function_refuses_a_malformed_event_before_any_work(efs, lambda_context, event, names):
    delta = load_function("delta")
    with pytest.raises(SpecError, match=names):
        delta.handler(event, lambda_context)
    assert not (efs / "staging").exists() or not os.listdir(efs / "staging")


def test_the_relay_function_copies_what_its_spec_names(efs, lambda_context):
    relay = load_function("relay")
    data = os.urandom(300_000)
    digest = content.hash_bytes(data)
    boto3.client("s3").put_object(Bucket=BUCKET, Key=content.object_key(digest), Body=data)
    spec = RelaySpec(cache_name="u#big", content_hash=digest, size=len(data)).named(
        "relay-" + "2" * 40 + "-1"
    )
    answer = relay.handler(spec.to_event(), lambda_context)
    assert answer["hit"] is False and answer["size"] == len(data) and answer["content_hash"] == digest
    cache = RelayCache(str(efs / "cache"))
    assert cache.is_ready("u#big", digest) and open(cache.path("u#big"), "rb").read() == data
    again = relay.handler(spec.to_event(), lambda_context)  # now a hit
    assert again["hit"] is True and again["size"] == len(data)


def test_the_relay_function_takes_the_delta_workflows_base_fetch(efs, lambda_context):
    """delta_job.asl.json's FetchBaseVersion sends {cache_name, content_hash, source}; PlainBase
    makes the source {} for a plain base."""
    relay = load_function("relay")
    data = os.urandom(1000)
    digest = content.hash_bytes(data)
    boto3.client("s3").put_object(Bucket=BUCKET, Key=content.object_key(digest), Body=data)
    event = {"cache_name": base_cache_name(digest), "content_hash": digest, "source": {}}
    assert relay.handler(event, lambda_context)["size"] == len(data)
    assert RelayCache(str(efs / "cache")).is_ready(base_cache_name(digest), digest)


@pytest.mark.parametrize(
    "event, names",
    [
        ({"content_hash": "a" * 64}, "cache_name"),
        ({"cache_name": "../etc", "content_hash": "a" * 64}, "cache_name"),
        ({"cache_name": "u#f"}, "content_hash"),
        ({"cache_name": "u#f", "content_hash": "a" * 64, "source": {"erasure_ref": "x"}}, "instances"),
    ],
)
def test_the_relay_function_refuses_a_malformed_event(efs, lambda_context, event, names):
    relay = load_function("relay")
    with pytest.raises(SpecError, match=names):
        relay.handler(event, lambda_context)
    assert not (efs / "cache").exists() or not os.listdir(efs / "cache")


@pytest.mark.parametrize(
    "event, names",
    [
        ({"id": "t1", "execution": "e1"}, "user"),
        ({"user": "u", "id": "t1"}, "execution"),
        ({"user": "u", "id": "t1", "execution": "e1", "action": "explode"}, "action"),
        ({"user": "u", "id": 7, "execution": "e1"}, "id"),
    ],
)
def test_the_tree_function_refuses_a_malformed_step_before_any_work(efs, lambda_context, event, names):
    tree = load_function("tree")
    with pytest.raises(SpecError, match=names):
        tree.handler(event, lambda_context)


def test_the_tree_function_leaves_a_job_it_does_not_run_to_the_execution_that_does(efs, lambda_context):
    tree = load_function("tree")
    answer = tree.handler({"user": "u", "id": "t1", "execution": "e1", "worker": "w001"}, lambda_context)
    assert answer == {"user": "u", "id": "t1", "state": "superseded"}  # no such job: nothing to step


@pytest.mark.parametrize(
    "event, names",
    [
        ({"user": "u", "staged": "a" * 64, "root": "/"}, "job"),
        ({"job": "dl-x", "user": "u", "staged": "a" * 64, "root": "/"}, "bundle job"),
        ({"job": "bundle-" + "0" * 40 + "-1", "user": "u", "root": "/"}, "staged"),
    ],
)
def test_the_bundle_function_refuses_a_malformed_event_before_any_work(efs, lambda_context, event, names):
    bundle_fn = load_function("bundle")
    with pytest.raises(BadRequestError, match=names):
        bundle_fn.handler(event, lambda_context)
    assert not (efs / "staging").exists() or not os.listdir(efs / "staging")
