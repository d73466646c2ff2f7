"""The job ledger under moto: one execution per job while it serves, a new one per new attempt.
The ledger only decides; the caller starts the attempt it is told to (`Attempt.start`)."""

from __future__ import annotations

import threading
import time

import pytest

from hycloud_core import jobs
from hycloud_core.errors import TryLaterError
from hycloud_core.jobs.ledger import JobLedger, JobRecord, submit

KEY = jobs.job_key("ul", "alice", "/f", "a" * 64)


@pytest.fixture
def table(moto_table):
    return moto_table


class FakeMachine:
    """Step Functions as the caller of submit sees it: execution name -> status (a succeeded one
    whose result is gone is not SUCCEEDED to it); and where each attempt was launched."""

    def __init__(self) -> None:
        self.runs: dict[str, str] = {}
        self.launches: list[str] = []
        self.machines: dict[str, str | None] = {}
        self.alive = True

    def status(self, record: JobRecord) -> str:
        state = self.runs.get(record.execution, "ABSENT")
        return "GONE" if state == "SUCCEEDED" and not self.alive else state

    def launch(self, record: JobRecord) -> None:
        self.launches.append(record.execution)
        self.machines[record.execution] = record.machine
        self.runs.setdefault(record.execution, "RUNNING")


def run(table, machine: FakeMachine, alive: bool = True, user: str = "alice", on: str | None = None) -> str:
    """What the controller's job service does: ask the ledger, start the attempt when told to."""
    machine.alive = alive
    attempt = submit(JobLedger(table, user), KEY, machine.status, on)
    if attempt.start:
        machine.launch(attempt.record)
    return attempt.execution


def test_the_ledger_says_who_starts_an_attempt_and_starts_none_itself(table):
    machine = FakeMachine()
    first = submit(JobLedger(table, "alice"), KEY, machine.status)
    assert first.start and first.execution == f"{KEY}-1" and machine.launches == []
    again = submit(JobLedger(table, "alice"), KEY, machine.status)  # recorded, not started: start it
    assert again.start and again.execution == first.execution
    machine.launch(again.record)
    served = submit(JobLedger(table, "alice"), KEY, machine.status)  # running: served, not started
    assert not served.start and served.execution == first.execution


def test_running_and_fresh_results_are_served_by_one_execution(table):
    machine = FakeMachine()
    first = run(table, machine)
    assert first == f"{KEY}-1" and run(table, machine) == first
    machine.runs[first] = "SUCCEEDED"
    assert run(table, machine) == first and machine.launches == [first]
    item = table.get_item(Key={"pk": "JOB#alice", "sk": KEY})["Item"]
    assert item["attempt"] == 1


@pytest.mark.parametrize("end", ["FAILED", "TIMED_OUT", "ABORTED"])
def test_a_new_attempt_after_a_failure_gets_a_new_name(table, end):
    machine = FakeMachine()
    first = run(table, machine)
    machine.runs[first] = end
    second = run(table, machine)
    assert second == f"{KEY}-2" and machine.launches == [first, second]


def test_a_gone_or_stale_result_starts_a_new_attempt(table, monkeypatch):
    machine = FakeMachine()
    first = run(table, machine)
    machine.runs[first] = "SUCCEEDED"
    assert run(table, machine, alive=False) == f"{KEY}-2"  # e.g. evicted from the relay cache
    machine.runs[f"{KEY}-2"] = "SUCCEEDED"
    import hycloud_core.jobs.ledger as ledger

    monkeypatch.setattr(ledger.time, "time", lambda: 10**12)  # past fresh_until (the result is there)
    assert run(table, machine) == f"{KEY}-3"


def test_an_attempt_recorded_but_never_started_is_started_under_its_name(table):
    JobLedger(table, "alice").advance(KEY, None)
    machine = FakeMachine()
    assert run(table, machine) == f"{KEY}-1" and machine.launches == [f"{KEY}-1"]


def test_concurrent_retries_agree_on_one_new_execution(table):
    machine = FakeMachine()
    machine.runs[run(table, machine)] = "FAILED"
    names, barrier = [], threading.Barrier(6)

    def retry() -> None:
        barrier.wait()
        names.append(run(table, machine))

    threads = [threading.Thread(target=retry) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert set(names) == {f"{KEY}-2"} and sorted(set(machine.launches)) == [f"{KEY}-1", f"{KEY}-2"]


def test_records_are_per_user(table):
    machine = FakeMachine()
    run(table, machine)
    assert JobLedger(table, "bob").get(KEY) is None
    assert JobLedger(table, "alice").get(KEY).attempt == 1


def test_records_expire_only_after_execution_names_are_reusable(table):
    before = time.time()
    JobLedger(table, "alice").advance(KEY, None)
    item = table.get_item(Key={"pk": "JOB#alice", "sk": KEY})["Item"]
    assert int(item["expiration"]) >= before + 90 * 86400
    assert int(item["expiration"]) <= time.time() + 92 * 86400


REMOTE = "arn:aws:states:eu-west-1:000000000000:stateMachine:HyCloud-Instance-eu-west-1-Relay"


def test_an_attempt_keeps_the_machine_it_was_launched_on(table):
    """A running attempt is served where it runs even when the next request would pick another
    machine; one recorded but never started is started under its name by a request for the same
    machine, and replaced by a new attempt by a request for another (whose input is for that one)."""
    machine = FakeMachine()
    first = run(table, machine, on=REMOTE)
    assert JobLedger(table, "alice").get(KEY).machine == REMOTE
    assert run(table, machine, on=None) == first  # running: served where it runs
    del machine.runs[first]  # recorded but never started
    assert run(table, machine, on=REMOTE) == first and machine.launches == [first, first]
    del machine.runs[first]
    second = run(table, machine, on=None)
    assert second == f"{KEY}-2" and machine.machines[second] is None
    assert JobLedger(table, "alice").get(KEY).machine is None


def test_a_job_changing_under_every_try_is_a_busy_answered_with_retry_after(table, monkeypatch):
    """Requests racing the same job past submit's tries get the expected "later" (503 with
    Retry-After) the client waits out, not an unexplained server error."""
    monkeypatch.setattr(JobLedger, "advance", lambda self, key, record, machine=None: None)  # always lost
    with pytest.raises(TryLaterError) as raised:
        submit(JobLedger(table, "alice"), KEY, FakeMachine().status)
    assert raised.value.status == 503 and raised.value.code == "busy" and raised.value.retry_after >= 1
