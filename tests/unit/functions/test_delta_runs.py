"""The delta routes' services under moto (services/delta_runs.py, services/delta_staging.py): what
a client staged is found by its sha256 or refused with a 409, a job's delta is read back from
staging inline or by piece, and an upload against anything but the path's current version is
refused before a job is keyed. Step Functions is a dict of execution statuses."""

from __future__ import annotations

import hashlib
import importlib
import os

import boto3
import pytest

from hycloud_core import content, jobs
from hycloud_core.errors import ConflictError
from tests.unit.functions.job_fakes import DOWNLOAD, H1, H2, MACHINE, Caller, job_runs

BUCKET = "hycloud-content"


@pytest.fixture
def services(stores, monkeypatch):
    runs, statuses = job_runs(monkeypatch)
    delta_runs = importlib.import_module("services.delta_runs")
    staging = importlib.import_module("services.delta_staging")
    monkeypatch.setattr(runs.executions, "describe", lambda machine, name: None)  # none started: queued
    return delta_runs, staging, runs, statuses, stores / "staging"


def test_a_staged_body_is_found_by_its_sha256_and_is_a_409_until_put(services):
    _, staging, _, _, _ = services
    body = b"a checksum list"
    digest = hashlib.sha256(body).hexdigest()
    with pytest.raises(ConflictError, match="nothing staged"):
        staging.staged_key("u-1", digest)
    boto3.client("s3").put_object(Bucket=BUCKET, Key=jobs.staged_key("u-1", digest), Body=body)
    assert staging.staged_key("u-1", digest) == jobs.staged_key("u-1", digest)
    assert jobs.staged_key("u-1", digest) in staging.upload_url("u-1", digest)


def test_a_jobs_delta_is_read_by_piece_and_a_409_before_it_exists(services):
    _, staging, _, _, staging_dir = services
    job = jobs.job_key("dl", "u-1", "/f.bin", H2, "version", H1) + "-1"
    with pytest.raises(ConflictError, match="no delta"):
        staging.delta_piece(job, 0, 10)
    os.makedirs(staging_dir, exist_ok=True)
    (staging_dir / f"{job}.delta").write_bytes(b"0123456789")
    assert staging.delta_piece(job, 3, 4) == b"3456"
    assert staging.inline_delta(job, 64) == "MDEyMzQ1Njc4OQ=="


def test_a_finished_small_delta_comes_inline_and_a_running_job_says_so(services):
    delta_runs, _, runs, statuses, staging_dir = services
    key = jobs.job_key("dl", "u-1", "/f.bin", H2, "version", H1)
    job = runs.run(Caller(), key, DOWNLOAD, runs.RunOptions(MACHINE))
    waiting = delta_runs.state_of(Caller(), job)
    assert waiting["state"] == "running" and waiting["queue"]["position"] == 1
    os.makedirs(staging_dir, exist_ok=True)
    (staging_dir / f"{job}.delta").write_bytes(b"delta")
    jobs.save_outcome(str(staging_dir), job, {"status": "SUCCEEDED", "output": '{"delta_size": 5}'})
    state = delta_runs.state_of(Caller(), job)
    assert state == {"state": "ready", "result": {"delta_size": 5, "delta": "ZGVsdGE="}}
    assert "delta" not in delta_runs.state_of(Caller(), job, inline=False)["result"]
    assert delta_runs.follow(Caller(), job, 0)["job"] == job


def test_an_upload_against_another_version_is_refused(services, monkeypatch):
    delta_runs, _, _, _, _ = services

    class Link:
        content_hash = H2

    class Holding:
        def require_dir(self, path):
            pass

        def current_link(self, path):
            return Link()

    monkeypatch.setattr(delta_runs, "namespace", lambda router: Holding())
    brought = delta_runs.Brought(b"delta", hashlib.sha256(b"delta").hexdigest())
    with pytest.raises(ConflictError, match="base version"):
        delta_runs.upload(Caller(), "/f.bin", H1, "c" * 64, brought, 0)


def test_a_relay_reads_the_callers_cached_copy_and_refuses_a_file_that_is_not_large(services, monkeypatch):
    relay_jobs = importlib.import_module("services.relay_jobs")
    from hycloud_core.fs.relay_cache import RelayCache

    data = b"the relayed file"
    digest = content.hash_bytes(data)

    class Link:
        content_hash, size = digest, len(data)

    class Holding:
        def current_link(self, path):
            return Link() if path == "/big.bin" else None

    monkeypatch.setattr(relay_jobs, "namespace", lambda router: Holding())
    monkeypatch.setattr(relay_jobs, "_record", lambda caller, key: None)  # no job ran
    with pytest.raises(ConflictError, match="not a large file"):
        relay_jobs.status_of(Caller(), "/small.txt")
    assert relay_jobs.status_of(Caller(), "/big.bin")["state"] == "absent"
    cache = RelayCache(relay_jobs.CONFIG.cache_dir)
    os.makedirs(cache.dir, exist_ok=True)
    tmp = os.path.join(cache.dir, ".hc-tmp")
    with open(tmp, "wb") as f:
        f.write(data)
    cache.publish("u-1#big.bin", tmp, digest)
    status = relay_jobs.status_of(Caller(), "/big.bin")
    assert status == {"path": "/big.bin", "size": len(data), "content_hash": digest, "state": "ready"}
    assert relay_jobs.read(Caller(), "/big.bin", 4, 7) == b"relayed"
