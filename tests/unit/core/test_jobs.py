"""Delta job ids: the same request names the same job the same day, another day a new one."""

import pytest

from hycloud_core import jobs
from hycloud_core.errors import BadRequestError


def test_job_id_is_deterministic_within_a_day_and_fresh_the_next(monkeypatch):
    monkeypatch.setattr(jobs.time, "time", lambda: 86400 * 100 + 10)
    a = jobs.job_id("dl", "alice", "/f", "a" * 64, "b" * 64)
    assert a == jobs.job_id("dl", "alice", "/f", "a" * 64, "b" * 64)
    assert a != jobs.job_id("dl", "bob", "/f", "a" * 64, "b" * 64)
    assert a != jobs.job_id("dl", "alice", "/f", "a" * 64, "b" * 64, b"signature")
    monkeypatch.setattr(jobs.time, "time", lambda: 86400 * 101 + 10)
    assert a != jobs.job_id("dl", "alice", "/f", "a" * 64, "b" * 64)
    assert jobs.checked_job_id(a) == a


@pytest.mark.parametrize("bad", ["", "dl-xyz", "../etc", "ul-" + "0" * 39, None, 5])
def test_malformed_job_ids_are_refused(bad):
    with pytest.raises(BadRequestError):
        jobs.checked_job_id(bad)
