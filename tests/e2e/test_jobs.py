"""Delta jobs report only what happened: short error codes, version-checked commits, and a new
execution for every new attempt (after a failure, or once a result is gone)."""

from __future__ import annotations

import io
import json
import os
import random
from concurrent.futures import ThreadPoolExecutor

import pytest

from hycloud_core import content
from hycloud_core.delta import versioned
from hycloud_core.jobs.executions import execution_arn
from tests.e2e.executions import finished

pytestmark = pytest.mark.e2e
MiB = 1024 * 1024
TRACE_MARKS = ("Traceback", 'File "', "stackTrace", ".py", "errorType", "line ")


def versions(seed: int, size: int = 6 * MiB, count: int = 3) -> list[bytes]:
    """A first version and edits of it, each of its own content (no store-wide sharing)."""
    rnd = random.Random(seed)
    v1 = rnd.randbytes(size) + os.urandom(16)
    out = [v1]
    for _ in range(count - 1):
        v = bytearray(v1)
        for _ in range(20):
            at = rnd.randrange(len(v) - 4096)
            v[at : at + 2000] = rnd.randbytes(2000)
        out.append(bytes(v))
    return out


def version_delta(base: bytes, new: bytes) -> bytes:
    out = io.BytesIO()
    versioned.encode(io.BytesIO(base), len(base), io.BytesIO(new), len(new), out)
    return out.getvalue()


def start_upload(user, path: str, base: bytes, delta: bytes, claimed: str) -> tuple[int, dict]:
    http = user.sdk().http
    r = http.session.put(
        http.base + "/v1/delta/upload",
        params={"path": path, "base_hash": content.hash_bytes(base), "content_hash": claimed},
        data=delta,
        headers={"Content-Type": "application/octet-stream"},
        timeout=60,
    )
    return r.status_code, r.json()


def wait(user, job: str) -> dict:
    """The job's final status body, as the API returns it."""
    http = user.sdk().http
    for _ in range(60):
        r = http.session.get(http.base + "/v1/delta/jobs", params={"id": job, "wait": 10}, timeout=60)
        assert r.status_code == 200, r.text
        if r.json()["state"] != "running":
            return r.json()
    raise AssertionError(f"job {job} still running")


def final(user, status: int, body: dict) -> dict:
    """A delta upload's outcome as a job status: a 409 is the check at request time (the other
    upload had already committed), a 202 the job's own check at its commit."""
    if status == 409:
        return {"job": None, "state": "failed", "error": body["error"]}
    assert status == 202, (status, body)
    return wait(user, body["job"])


def current_hash(deployment, user, path: str) -> str:
    link = user.ns_dir() / path.lstrip("/")
    return json.loads(link.read_bytes())["content_hash"]


def executions(deployment, machine: str) -> dict[str, str]:
    sfn = deployment.client("stepfunctions")
    arn = deployment.outputs[machine]
    pages = sfn.get_paginator("list_executions").paginate(stateMachineArn=arn)
    return {e["name"]: e["status"] for page in pages for e in page["executions"]}


def ended(deployment, machine: str, *names: str) -> tuple[str, ...]:
    """The executions' final states: a job is ready at its commit, before its Settle state ends."""
    sfn, arn = deployment.client("stepfunctions"), deployment.outputs[machine]
    return tuple(finished(sfn, execution_arn(arn, name), timeout_s=30)["status"] for name in names)


def assert_short_error(status: dict, code: str) -> None:
    assert status["state"] == "failed" and set(status) == {"job", "state", "error"}, status
    assert set(status["error"]) == {"code", "message"} and status["error"]["code"] == code, status
    text = json.dumps(status)
    assert not any(mark in text for mark in TRACE_MARKS) and len(status["error"]["message"]) < 200, text


def test_failed_jobs_report_a_code_and_a_message_only(deployment, alice, tmp_path):
    v1, v2 = versions(41, size=20 * MiB, count=2)  # over one part: the job streams it to S3
    (tmp_path / "v1").write_bytes(v1)
    alice.cli("put", str(tmp_path / "v1"), "/codes.bin")
    cases = {
        "hash-mismatch": (version_delta(v1, v2), content.hash_bytes(v2[:-1] + b"x")),
        "delta-invalid": (os.urandom(50_000), content.hash_bytes(v2)),
    }
    s3, bucket = deployment.client("s3"), deployment.outputs["BucketName"]
    for code, (delta, claimed) in cases.items():
        status, body = start_upload(alice, "/codes.bin", v1, delta, claimed)
        assert status in (200, 202), body  # 200: the job had already ended when the request looked
        assert_short_error(wait(alice, body["job"]) if status == 202 else body, code)
        assert current_hash(deployment, alice, "/codes.bin") == content.hash_bytes(v1)
        key = content.object_key(claimed)  # nothing stored under the claimed hash, no part left
        assert s3.list_objects_v2(Bucket=bucket, Prefix=key).get("KeyCount") == 0
        assert not s3.list_multipart_uploads(Bucket=bucket, Prefix=key).get("Uploads")


def test_stale_delta_upload_fails_loudly_and_changes_nothing(deployment, alice, tmp_path):
    """Issue 10 item 4: the same delta upload again, onto a path that moved on, is not 'uploaded'."""
    v1, v2, v3 = versions(42)
    for name, data in (("v1", v1), ("v2", v2), ("v3", v3)):
        (tmp_path / name).write_bytes(data)
    put = ("put", str(tmp_path / "v2"), "/item4.bin", "--force-delta", "--base")
    alice.cli("put", str(tmp_path / "v1"), "/item4.bin")
    alice.cli(*put, str(tmp_path / "v1"))
    assert current_hash(deployment, alice, "/item4.bin") == content.hash_bytes(v2)
    alice.cli("put", str(tmp_path / "v3"), "/item4.bin")

    again = alice.cli(*put, str(tmp_path / "v1"), check=False)
    assert again.returncode != 0, again.stdout + again.stderr
    assert "version" in (again.stdout + again.stderr).lower()
    assert current_hash(deployment, alice, "/item4.bin") == content.hash_bytes(v3)
    alice.cli("get", "/item4.bin", str(tmp_path / "back"))
    assert (tmp_path / "back").read_bytes() == v3

    alice.cli(*put, str(tmp_path / "v3"))  # against the version the path holds: accepted
    alice.cli("get", "/item4.bin", str(tmp_path / "back"))
    assert (tmp_path / "back").read_bytes() == v2


def test_path_changed_while_the_job_ran_gives_version_mismatch(deployment, alice, tmp_path):
    """Two delta uploads against the same base at once: one wins, and the other fails with
    version-mismatch (at its request, or at its job's commit) instead of replacing the first."""
    v1, v2, v3 = versions(43)
    (tmp_path / "v1").write_bytes(v1)
    alice.cli("put", str(tmp_path / "v1"), "/race.bin")
    deltas = [(version_delta(v1, v), content.hash_bytes(v)) for v in (v2, v3)]
    with ThreadPoolExecutor(2) as both:  # at once: a job ends within a request's time now
        started = list(both.map(lambda d: start_upload(alice, "/race.bin", v1, *d), deltas))
    finals = {v: final(alice, *answer) for v, answer in zip((v2, v3), started, strict=True)}
    won = [v for v, s in finals.items() if s["state"] == "ready"]
    lost = [s for s in finals.values() if s["state"] != "ready"]
    assert len(won) == 1 and len(lost) == 1, finals
    assert_short_error(lost[0], "version-mismatch")
    assert current_hash(deployment, alice, "/race.bin") == content.hash_bytes(won[0])


def test_failed_job_retried_runs_a_new_execution(deployment, alice, tmp_path):
    """A job that failed for a reason outside its request runs again when resubmitted."""
    v1, v2 = versions(44, count=2)
    (tmp_path / "v1").write_bytes(v1)
    alice.cli("put", str(tmp_path / "v1"), "/retry.bin")
    s3, bucket = deployment.client("s3"), deployment.outputs["BucketName"]
    key = content.object_key(content.hash_bytes(v1))
    s3.delete_object(Bucket=bucket, Key=key)  # the base cannot be fetched: the job fails
    delta = version_delta(v1, v2)
    status, first = start_upload(alice, "/retry.bin", v1, delta, content.hash_bytes(v2))
    assert status in (200, 202), first  # 200: the job had already ended when the request looked
    assert_short_error(wait(alice, first["job"]) if status == 202 else first, "content-unavailable")

    s3.put_object(Bucket=bucket, Key=key, Body=v1)
    status, second = start_upload(alice, "/retry.bin", v1, delta, content.hash_bytes(v2))
    assert status in (200, 202) and second["job"] != first["job"], (first, second)
    assert (wait(alice, second["job"]) if status == 202 else second)["state"] == "ready"
    assert current_hash(deployment, alice, "/retry.bin") == content.hash_bytes(v2)
    runs = ended(deployment, "DeltaStateMachineArn", first["job"], second["job"])
    assert runs == ("FAILED", "SUCCEEDED")


def test_same_job_while_running_or_ready_is_one_execution(deployment, alice, tmp_path):
    v1, v2 = versions(45, count=2)
    (tmp_path / "v1").write_bytes(v1)
    (tmp_path / "v2").write_bytes(v2)
    alice.cli("put", str(tmp_path / "v1"), "/dedup.bin")
    alice.cli("put", str(tmp_path / "v2"), "/dedup.bin")
    http, body = alice.sdk().http, {"path": "/dedup.bin", "base_hash": content.hash_bytes(v1)}
    first = http.json("POST", "/v1/delta/download", json=body)
    second = http.json("POST", "/v1/delta/download", json=body)  # while it runs
    assert first["job"] == second["job"]
    assert wait(alice, first["job"])["state"] == "ready"
    third = http.json("POST", "/v1/delta/download", json=body)  # its result is still there
    assert third["job"] == first["job"]
    assert sum(1 for name in executions(deployment, "DeltaStateMachineArn") if name == first["job"]) == 1
