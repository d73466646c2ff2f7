"""Job keys, execution names and failure reports."""

import pytest

from hycloud_core import jobs
from hycloud_core.errors import BadRequestError

H1, H2 = "a" * 64, "b" * 64


def test_job_key_depends_on_every_part_and_nothing_else():
    key = jobs.job_key("ul", "alice", "/f", H1, H2, b"delta")
    assert key == jobs.job_key("ul", "alice", "/f", H1, H2, b"delta")  # no clock, no randomness
    others = {
        jobs.job_key("ul", "bob", "/f", H1, H2, b"delta"),
        jobs.job_key("ul", "alice", "/g", H1, H2, b"delta"),
        jobs.job_key("ul", "alice", "/f", H2, H1, b"delta"),  # another base (state read)
        jobs.job_key("ul", "alice", "/f", H1, H2, b"delta2"),
        jobs.job_key("dl", "alice", "/f", H1, H2, b"delta"),
        jobs.job_key("ul", "alice/", "f", H1, H2, b"delta"),  # parts are not simply joined
    }
    assert key not in others and len(others) == 6
    assert key.startswith("ul-") and len(key) == 43


def test_execution_names_are_attempts_of_a_key():
    key = jobs.job_key("relay", "cache", H1)
    names = [jobs.execution_name(key, n) for n in (1, 2, 10**8)]
    assert names == [f"{key}-1", f"{key}-2", f"{key}-100000000"] and all(len(n) <= 80 for n in names)
    assert all(jobs.key_of(n) == key and jobs.checked_job_id(n) == n for n in names)
    with pytest.raises(ValueError):
        jobs.execution_name(key, 0)
    with pytest.raises(ValueError):
        jobs.execution_name("xx-123", 1)
    with pytest.raises(ValueError):
        jobs.job_key("zz", "a")


@pytest.mark.parametrize(
    "bad",
    ["", "dl-xyz", "../etc", "ul-" + "0" * 40, "ul-" + "0" * 40 + "-0", "ul-" + "0" * 39 + "-1", None, 5],
)
def test_malformed_job_ids_are_refused(bad):
    with pytest.raises(BadRequestError):
        jobs.checked_job_id(bad)


@pytest.mark.parametrize(
    "error, code",
    [
        ("HashMismatch", "hash-mismatch"),
        ("VersionMismatch", "version-mismatch"),
        ("DeltaMismatch", "delta-mismatch"),
        ("DeltaFormatError", "delta-invalid"),
        ("FetchFailed", "content-unavailable"),
        ("RelayFetchFailed", "relay-failed"),
        ("States.Timeout", "job-failed"),
        (None, "job-failed"),
    ],
)
def test_failures_are_a_code_and_a_fixed_message(error, code):
    report = jobs.failure(error)
    assert set(report) == {"code", "message"} and report["code"] == code
    assert not any(ch.isdigit() for ch in report["message"])  # no sizes, offsets or hashes


def test_the_classes_the_delta_function_raises_are_mapped():
    from hycloud_core.delta.errors import DeltaFormatError, DeltaMismatch

    for cls in (jobs.HashMismatch, jobs.VersionMismatch, DeltaMismatch, DeltaFormatError):
        assert jobs.failure(cls.__name__)["code"] != "job-failed"


def test_bundle_jobs_name_staging_files_but_are_not_ledger_jobs(tmp_path):
    name = jobs.new_bundle_job()
    assert jobs.staging_file(str(tmp_path), name, "outcome") == str(tmp_path / f"{name}.outcome")
    with pytest.raises(BadRequestError):
        jobs.checked_job_id(name)  # relay and delta job routes do not take it
    for bad in ("bundle-../x-1", f"{name}0", name.replace("-1", "-2")):
        with pytest.raises(BadRequestError):
            jobs.staging_file(str(tmp_path), bad, "outcome")
