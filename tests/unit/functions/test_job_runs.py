"""The controller's job service (services/job_runs.py) under moto: the ledger says which attempt
serves, the service stages what the request brought and queues a new attempt with its spec, and
whether a finished result is still there follows from the job's kind. No route hands it a
callback. Step Functions is a dict of execution statuses; the dispatch pass is left out."""

from __future__ import annotations

import io
import json
import os

import pytest

from hycloud_core import jobs
from hycloud_core.instances import Instance
from hycloud_core.jobs.queue import QueueStore
from tests.unit.functions.job_fakes import DOWNLOAD, H1, H2, MACHINE, UPLOAD, Caller, job_runs

TABLE, BUCKET = "hycloud-test", "hycloud-content"


@pytest.fixture
def service(stores, monkeypatch):
    import boto3

    runs, statuses = job_runs(monkeypatch)
    return runs, statuses, boto3.resource("dynamodb").Table(TABLE), stores / "staging"


def _queued(table) -> dict[str, dict]:
    return {
        job.job: {"machine": job.machine, "input": json.loads(job.input)}
        for job in QueueStore(table).head(10)
    }


def test_a_new_attempt_is_staged_then_queued_with_its_spec(service):
    runs, _, table, staging = service
    key = jobs.job_key("ul", "u-1", "/f.bin", H1, H2, b"d")
    options = runs.RunOptions(MACHINE, size=1000, staging=runs.Staging(b"the delta", "delta"))
    job = runs.run(Caller(), key, UPLOAD, options)
    assert job == f"{key}-1"
    assert (staging / f"{job}.delta").read_bytes() == b"the delta"
    queued = _queued(table)[job]
    assert queued["machine"] == MACHINE
    assert queued["input"] == {**UPLOAD.to_event(), "job": job}  # the JSON the workflow reads
    assert type(UPLOAD).from_event(queued["input"]) == UPLOAD.named(job)


def test_a_queued_attempt_serves_the_next_request_and_is_neither_staged_nor_queued_again(service):
    runs, _, table, staging = service
    key = jobs.job_key("ul", "u-1", "/f.bin", H1, H2, b"d")
    first = runs.run(Caller(), key, UPLOAD, runs.RunOptions(MACHINE, staging=runs.Staging(b"one", "delta")))
    again = runs.run(Caller(), key, UPLOAD, runs.RunOptions(MACHINE, staging=runs.Staging(b"two", "delta")))
    assert again == first and (staging / f"{first}.delta").read_bytes() == b"one"
    assert list(_queued(table)) == [first]


def test_a_finished_upload_serves_only_while_its_path_holds_the_new_version(service, monkeypatch):
    runs, statuses, _, _ = service
    key = jobs.job_key("ul", "u-1", "/f.bin", H1, H2, b"d")
    first = runs.run(Caller(), key, UPLOAD, runs.RunOptions(MACHINE))
    statuses[first] = "SUCCEEDED"

    class Link:
        content_hash = H2

    class Holding:
        def current_link(self, path):
            return Link() if path == "/f.bin" else None

    monkeypatch.setattr(runs, "namespace", lambda router: Holding())
    assert runs.run(Caller(), key, UPLOAD, runs.RunOptions(MACHINE)) == first
    Link.content_hash = H1  # the path moved on (or back): the job runs anew
    assert runs.run(Caller(), key, UPLOAD, runs.RunOptions(MACHINE)) == f"{key}-2"


def test_a_finished_delta_download_serves_while_its_delta_is_in_staging(service):
    runs, statuses, _, staging = service
    key = jobs.job_key("dl", "u-1", "/f.bin", H2, "version", H1)
    first = runs.run(Caller(), key, DOWNLOAD, runs.RunOptions(MACHINE))
    statuses[first] = "SUCCEEDED"
    os.makedirs(staging, exist_ok=True)
    (staging / f"{first}.delta").write_bytes(b"delta")
    assert runs.run(Caller(), key, DOWNLOAD, runs.RunOptions(MACHINE)) == first
    os.unlink(staging / f"{first}.delta")  # evicted by upkeep
    assert runs.run(Caller(), key, DOWNLOAD, runs.RunOptions(MACHINE)) == f"{key}-2"


def test_a_failed_attempt_is_followed_by_a_new_one(service):
    runs, statuses, table, _ = service
    key = jobs.job_key("dl", "u-1", "/f.bin", H2, "version", H1)
    first = runs.run(Caller(), key, DOWNLOAD, runs.RunOptions(MACHINE))
    QueueStore(table).release(first)
    statuses[first] = "FAILED"
    assert runs.run(Caller(), key, DOWNLOAD, runs.RunOptions(MACHINE)) == f"{key}-2"


def test_a_direct_job_runs_in_the_request_and_is_not_queued(service, monkeypatch):
    runs, _, table, _ = service
    ran = []
    monkeypatch.setattr(runs, "invoke_now", lambda function, spec: ran.append((function, spec)))
    key = jobs.job_key("dl", "u-1", "/f.bin", H2, "version", H1)
    job = runs.run(Caller(), key, DOWNLOAD, runs.RunOptions(MACHINE, direct="delta-fn"))
    assert ran == [("delta-fn", DOWNLOAD.named(job))] and _queued(table) == {}


def test_a_data_instances_staging_goes_to_its_bucket(service, monkeypatch):
    runs, _, table, staging = service
    sent = []
    monkeypatch.setattr(
        runs.optimal_instance, "put", lambda at, key, body: sent.append(("put", at.region, key, body))
    )
    monkeypatch.setattr(runs.optimal_instance, "copy", lambda at, key: sent.append(("copy", at.region, key)))
    west = Instance("eu-west-1", "bucket-west", "", "")
    remote = "arn:aws:states:eu-west-1:123456789012:stateMachine:delta"
    key = jobs.job_key("dl", "u-1", "/f.bin", H2, "signature", H1)
    signature = runs.Staging(b"checksums", at=west, key="staging/u-1/x")
    job = runs.run(Caller(), key, DOWNLOAD, runs.RunOptions(MACHINE, at=remote, staging=signature))
    assert sent == [("put", "eu-west-1", "staging/u-1/x", b"checksums")]
    assert not (staging / f"{job}.sig").exists() and _queued(table)[job]["machine"] == remote
    key2 = jobs.job_key("dl", "u-1", "/g.bin", H2, "signature", H1)
    runs.run(
        Caller(), key2, DOWNLOAD, runs.RunOptions(MACHINE, at=remote, staging=runs.Staging(at=west, key="k"))
    )
    assert sent[-1] == ("copy", "eu-west-1", "k")  # staged by the client at home: copied there


class _Lambda:
    def __init__(self, answer: dict) -> None:
        self.answer, self.calls = answer, []

    def invoke(self, **call):
        self.calls.append(call)
        if call.get("InvocationType") == "Event":
            return {"StatusCode": 202}
        return {"StatusCode": 200, "Payload": io.BytesIO(json.dumps(self.answer).encode())}


def test_a_direct_upload_that_asks_to_settle_starts_the_settle_job_without_waiting(service, monkeypatch):
    runs, _, _, staging = service
    settle = {"action": "settle", "cache_name": "base#x", "content_hash": H1, "user": "u-1", "path": "/f"}
    fake = _Lambda({"job": "j", "entry": {}, "settle": settle})
    monkeypatch.setattr(runs, "_lambda", lambda: fake)
    job = jobs.job_key("ul", "u-1", "/f.bin", H1, H2, b"d") + "-1"
    runs.invoke_now("delta-fn", UPLOAD.named(job))
    assert [c.get("InvocationType") for c in fake.calls] == [None, "Event"]
    assert json.loads(fake.calls[1]["Payload"]) == settle and fake.calls[1]["FunctionName"] == "delta-fn"
    assert jobs.load_outcome(str(staging), job)["status"] == "SUCCEEDED"


def test_a_result_without_a_settle_starts_nothing_more(service, monkeypatch):
    runs, _, _, _ = service
    fake = _Lambda({"job": "j", "entry": {}})
    monkeypatch.setattr(runs, "_lambda", lambda: fake)
    runs.invoke_now("delta-fn", UPLOAD.named(jobs.job_key("ul", "u-1", "/f.bin", H1, H2, b"d") + "-1"))
    assert len(fake.calls) == 1
