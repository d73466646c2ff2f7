"""Job specs: the JSON the controller sends is the JSON the workflows read, and a function handed
anything else refuses it by name."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from hycloud_core.jobs.specs import (
    BucketAt,
    ByteRange,
    DeltaDownloadSpec,
    DeltaUploadSpec,
    RelaySpec,
    SettleSpec,
    Source,
    SpecError,
    TableAt,
    delta_spec,
)

H1, H2, H3 = "a" * 64, "b" * 64, "c" * 64
JOB = "dl-" + "0" * 40 + "-1"
CODED = Source(
    erasure_key="layouts/x.json",
    instances=(BucketAt(region="eu", bucket="b-eu"),),
    table=TableAt(name="t", region="us"),
)


def _wire(spec) -> dict:
    return json.loads(json.dumps(spec.to_event()))  # what Step Functions or Lambda hands over


def test_a_version_delta_is_the_dict_the_controller_always_sent():
    spec = DeltaDownloadSpec(
        level=3, cache_name="u#f", content_hash=H1, base_hash=H2, base_cache_name=f"base#{H2}"
    )
    assert _wire(spec) == {
        "level": 3,
        "action": "encode",
        "cache_name": "u#f",
        "content_hash": H1,
        "base_hash": H2,
        "base_cache_name": f"base#{H2}",
    }


def test_flags_and_absent_fields_are_left_out_because_the_workflow_tests_presence():
    """delta_job.asl.json branches on `$.base_cached` and `$.base_source` being present."""
    spec = DeltaDownloadSpec(cache_name="n", content_hash=H1, base_hash=H2, base_cache_name="b")
    assert "base_cached" not in _wire(spec) and "base_source" not in _wire(spec)
    assert _wire(replace(spec, base_cached=True))["base_cached"] is True


def test_a_coded_remote_delta_carries_its_source_flat_and_its_base_source_nested():
    base = Source(bucket="home", bucket_region="us", table=TableAt(name="t", region="us"))
    spec = DeltaDownloadSpec(
        cache_name="n",
        content_hash=H1,
        base_hash=H2,
        base_cache_name="b",
        level=3,
        source=CODED,
        publish_delta=True,
        base_source=base,
    )
    event = _wire(spec)
    assert event["erasure_key"] == "layouts/x.json" and event["publish_delta"] is True
    assert event["instances"] == [{"region": "eu", "bucket": "b-eu"}]
    assert event["table"] == {"name": "t", "region": "us"}
    assert event["base_source"] == {
        "bucket": "home",
        "bucket_region": "us",
        "table": {"name": "t", "region": "us"},
    }


@pytest.mark.parametrize(
    "spec",
    [
        DeltaDownloadSpec(
            cache_name="n",
            content_hash=H1,
            staged_key="staging/u/x",
            staged_sha256=H3,
            source=CODED,
            publish_delta=True,
            job=JOB,
        ),
        DeltaDownloadSpec(
            cache_name="n",
            content_hash=H1,
            base_hash=H2,
            base_cache_name="b",
            base_cached=True,
            new_url="https://x",
            level=19,
        ),
        DeltaUploadSpec(
            user="u",
            path="/f",
            cache_name="n",
            content_hash=H1,
            base_hash=H2,
            base_cache_name="b",
            base_source=CODED,
        ),
        RelaySpec(cache_name="n", content_hash=H1, size=10, source=CODED, publish_key="relay/x"),
        SettleSpec(cache_name="base#n", content_hash=H1, user="u", path="/f"),
        RelaySpec(
            cache_name="n",
            content_hash=H1,
            size=3 << 30,
            range_options={},
            ranges=(
                ByteRange(index=0, offset=0, length=1 << 30),
                ByteRange(index=1, offset=1 << 30, length=2 << 30),
            ),
        ),
    ],
)
def test_specs_survive_the_wire(spec):
    assert type(spec).from_event(_wire(spec)) == spec


def test_the_function_sees_what_the_workflow_added_and_ignores_what_it_does_not_read():
    event = {
        **_wire(DeltaDownloadSpec(cache_name="n", content_hash=H1)),
        "job": JOB,
        "worker": "w001",
        "fetched": {"Payload": {"hit": False, "size": 5, "seconds": 1.0}},
    }
    spec = delta_spec(event)
    assert isinstance(spec, DeltaDownloadSpec) and spec.job_name == JOB
    assert spec.fetched == {"Payload": {"hit": False, "size": 5, "seconds": 1.0}}


def test_the_delta_workflows_empty_base_source_is_no_source():
    """PlainBase puts `base_source: {}` into the state before the fetch: it names nothing."""
    event = {
        "action": "apply",
        "user": "u",
        "path": "/f",
        "cache_name": "n",
        "content_hash": H1,
        "base_hash": H2,
        "base_cache_name": "b",
        "base_source": {},
    }
    assert DeltaUploadSpec.from_event(event).base_source == Source()


@pytest.mark.parametrize(
    "event, names",
    [
        ({"action": "encode", "content_hash": H1}, "cache_name"),
        ({"action": "encode", "cache_name": "n", "content_hash": 5}, "content_hash"),
        ({"action": "encode", "cache_name": "../x", "content_hash": H1}, "cache_name"),
        ({"action": "encode", "cache_name": "n", "content_hash": H1, "base_hash": H2}, "base_cache_name"),
        ({"action": "encode", "cache_name": "n", "content_hash": H1, "staged_key": "k"}, "staged_sha256"),
        ({"action": "encode", "cache_name": "n", "content_hash": H1, "level": "3"}, "level"),
        ({"action": "encode", "cache_name": "n", "content_hash": H1, "base_cached": "yes"}, "base_cached"),
        ({"action": "encode", "cache_name": "n", "content_hash": H1, "erasure_ref": "x"}, "instances"),
        (
            {
                "action": "encode",
                "cache_name": "n",
                "content_hash": H1,
                "erasure_ref": "x",
                "instances": [{"region": "eu"}],
            },
            "bucket",
        ),
        (
            {
                "action": "apply",
                "cache_name": "n",
                "content_hash": H1,
                "base_hash": H2,
                "base_cache_name": "b",
                "path": "/f",
            },
            "user",
        ),
        ({"action": "apply", "user": "u", "path": "/f", "cache_name": "n", "content_hash": H1}, "base_hash"),
        ({"action": "rm -rf", "cache_name": "n", "content_hash": H1}, "action"),
        ({"cache_name": "n", "content_hash": H1}, "action"),
    ],
)
def test_a_malformed_delta_event_is_refused_naming_the_key(event, names):
    with pytest.raises(SpecError, match=names) as refused:
        delta_spec(event)
    assert refused.value.code == "bad-job-spec"


@pytest.mark.parametrize(
    "event, names",
    [
        ({"content_hash": H1}, "cache_name"),
        ({"cache_name": "n"}, "content_hash"),
        ({"cache_name": "a/b", "content_hash": H1}, "cache_name"),
        ({"cache_name": "n", "content_hash": H1, "size": 1.5}, "size"),
        ({"cache_name": "n", "content_hash": H1, "ranges": [{"index": 0, "offset": 0}]}, "length"),
        ({"cache_name": "n", "content_hash": H1, "throttle_bps": True}, "throttle_bps"),
        ({"cache_name": "n", "content_hash": H1, "table": "t"}, "table"),
        ([], "JSON object"),
    ],
)
def test_a_malformed_relay_event_is_refused_naming_the_key(event, names):
    with pytest.raises(SpecError, match=names):
        RelaySpec.from_event(event)


def test_the_controller_cannot_make_a_malformed_spec():
    with pytest.raises(SpecError, match="content_hash"):
        DeltaDownloadSpec(cache_name="n", content_hash=None)  # type: ignore[arg-type]
    with pytest.raises(SpecError, match="cache_name"):
        RelaySpec(cache_name="", content_hash=H1)
    with pytest.raises(SpecError, match="base_hash"):
        DeltaUploadSpec(user="u", path="/f", cache_name="n", content_hash=H1)


def test_a_relay_of_a_known_object_needs_no_content_hash_and_an_int_throttle_is_a_rate():
    spec = RelaySpec.from_event({"cache_name": "n", "key": "objects/x", "throttle_bps": 1000})
    assert spec.key == "objects/x" and spec.content_hash is None and spec.throttle_bps == 1000


def test_tree_and_bundle_jobs_are_what_their_workflows_read():
    from hycloud_core.jobs.specs import BundleJobSpec, TreeJobSpec, TreeStepSpec

    assert _wire(TreeJobSpec(user="u", id="t1")) == {"user": "u", "id": "t1"}
    step = TreeStepSpec.from_event({"user": "u", "id": "t1", "execution": "e1", "worker": "w001"})
    assert (step.execution, step.failed) == ("e1", False)
    failed = {"action": "fail", "user": "u", "id": "t1", "execution": "e1", "error": "States.Timeout"}
    assert TreeStepSpec.from_event(failed).failed
    with pytest.raises(SpecError, match="user"):
        TreeJobSpec(user="", id="t1")
    job = "bundle-" + "0" * 40 + "-1"
    spec = BundleJobSpec(job=job, user="u", staged=H1, root="/d", parents=True)
    assert _wire(spec) == {"job": job, "user": "u", "staged": H1, "root": "/d", "parents": True}
    assert (
        BundleJobSpec.from_event({**_wire(replace(spec, parents=False)), "worker": "w001"}).parents is False
    )


def test_the_delta_function_tells_a_settle_from_its_jobs_by_action():
    settle = SettleSpec(cache_name="base#n", content_hash=H1, user="u", path="/f")
    assert settle.to_event()["action"] == "settle" and delta_spec(settle.to_event()) == settle
    with pytest.raises(SpecError, match="'path'"):
        delta_spec({"action": "settle", "cache_name": "base#n", "content_hash": H1, "user": "u"})
