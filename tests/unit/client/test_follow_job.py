"""follow_job (transfer/jobs.py): the one loop that follows a cloud job to its end, and the four
kinds of job the client follows with it (delta, relay, tree, staged bundle)."""

from __future__ import annotations

import pytest

from hycloud.sdk import tree_jobs
from hycloud.transfer import delta, download
from hycloud.transfer.jobs import JobPoll, JobTimeout, follow_job
from hycloud.transfer.progress import Progress
from hycloud_core.errors import HyCloudError
from tests.progress_notes import Notes


class Api:
    """Answers each GET with the next scripted status (or raises it when it is an exception);
    records the requests."""

    def __init__(self, *statuses: dict | BaseException, first: dict | None = None) -> None:
        self.statuses, self.asked = list(statuses), []
        self.first = first
        self.base = "http://unused"

    def json(self, method: str, route: str, **kwargs) -> dict:
        self.asked.append((method, route, kwargs.get("params")))
        if method == "POST":
            assert self.first is not None
            return self.first
        step = self.statuses.pop(0)
        if isinstance(step, BaseException):
            raise step
        return step


class Clock:
    def __init__(self) -> None:
        self.now, self.slept = 0.0, []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


POLL = JobPoll("/v1/things", {"id": "j"}, wait_s=5)


def test_an_ended_job_costs_no_request():
    api = Api()
    assert follow_job(api, POLL, {"state": "succeeded", "n": 1}) == {"state": "succeeded", "n": 1}
    assert api.asked == []


def test_a_running_job_is_long_polled_until_it_ends_and_every_status_is_seen():
    api = Api({"state": "running", "done": 1}, {"state": "succeeded", "done": 2})
    seen: list[dict] = []
    final = follow_job(api, POLL, {"state": "running", "done": 0}, seen.append)
    assert final == {"state": "succeeded", "done": 2}
    assert [s["done"] for s in seen] == [0, 1, 2]
    assert api.asked == [("GET", "/v1/things", {"id": "j", "wait": 5})] * 2


def test_ended_states_make_every_other_state_a_running_one():
    poll = JobPoll("/v1/x", {}, 1, ended=("ready", "failed"))
    api = Api({"state": "queued"}, {"state": "running"}, {"state": "ready"})
    assert follow_job(api, poll, {"state": "starting"})["state"] == "ready" and len(api.asked) == 3


def test_the_pause_between_polls_grows_to_its_cap():
    clock = Clock()
    poll = JobPoll("/v1/x", {}, 1, pause_s=1.0, pause_growth=2.0, max_pause_s=3.0)
    api = Api(*[{"state": "running"}] * 4, {"state": "done"})
    follow_job(api, poll, {"state": "running"}, sleep=clock.sleep, clock=clock)
    assert clock.slept == [1.0, 2.0, 3.0, 3.0, 3.0]


def test_a_job_that_outlives_the_timeout_raises_with_its_last_status():
    clock = Clock()
    poll = JobPoll("/v1/x", {}, 1, timeout_s=2.5, pause_s=1.0, pause_growth=1.0)
    api = Api(*[{"state": "running", "n": n} for n in range(10)])
    with pytest.raises(JobTimeout) as err:
        follow_job(api, poll, {"state": "running", "n": -1}, sleep=clock.sleep, clock=clock)
    assert len(api.asked) == 3 and err.value.last == {"state": "running", "n": 2}


# --- the callers -----------------------------------------------------------------------------
def test_a_delta_job_started_and_already_done_costs_no_poll():
    api = Api()
    assert delta._followed(api, {"job": "d", "state": "ready", "result": {"k": 1}}) == ("d", {"k": 1})
    assert api.asked == []


def test_a_delta_job_is_followed_to_its_result_or_its_error():
    api = Api({"state": "running"}, {"state": "ready", "result": {"delta_size": 3}})
    assert delta._followed(api, {"job": "d", "state": "running"}) == ("d", {"delta_size": 3})
    assert api.asked[0] == ("GET", "/v1/delta/jobs", {"id": "d", "wait": delta.LONG_POLL_S})
    failing = Api({"state": "failed", "error": {"code": "base-unknown", "message": "no base", "status": 409}})
    with pytest.raises(HyCloudError) as err:
        delta.wait_job(failing, "d")
    assert (err.value.code, err.value.status) == ("base-unknown", 409)


def test_a_delta_job_that_never_ends_times_out_with_its_own_error(monkeypatch):
    monkeypatch.setattr(delta, "JOB_WAIT_S", -1)
    with pytest.raises(HyCloudError) as err:
        delta.wait_job(Api({"state": "running"}), "d", {"job": "d", "state": "running"})
    assert err.value.code == "delta-timeout" and "delta job d" in err.value.message


def test_a_relay_says_its_queue_place_once_and_ends_ready(monkeypatch):
    monkeypatch.setattr("time.sleep", lambda s: None)
    place = {"position": 3, "estimated_start_s": 12.0}
    first = {"state": "running", "size": 10, "queue": place}
    api = Api({"state": "running", "size": 10, "queue": place}, {"state": "ready", "size": 10}, first=first)
    report: dict = {}
    progress = Notes()
    assert download.relay_ready(api, "/big", progress, report)["state"] == "ready"
    assert report == {"queue": place} and len(progress.notes) == 1 and "position 3" in progress.notes[0]
    assert api.asked[1] == ("GET", "/v1/relay", {"path": "/big", "wait": 10})


def test_a_relay_that_fails_says_why(monkeypatch):
    monkeypatch.setattr("time.sleep", lambda s: None)
    api = Api({"state": "failed", "error": {"message": "gone"}}, first={"state": "running", "size": 1})
    with pytest.raises(HyCloudError) as err:
        download.relay_ready(api, "/big")
    assert err.value.code == "relay-failed" and "gone" in err.value.message


def test_a_tree_job_reports_files_and_raises_when_it_stops():
    api = Api(
        {"job": "t", "op": "copy", "src": "/a", "dst": "/b", "state": "running", "done": 5, "total": 10},
        {"job": "t", "op": "copy", "src": "/a", "dst": "/b", "state": "failed", "done": 7, "total": 10},
    )
    progress = Progress()
    start = {"job": "t", "op": "copy", "src": "/a", "dst": "/b", "state": "running", "done": 0, "total": 10}
    with pytest.raises(tree_jobs.TreeJobFailed) as err:
        tree_jobs.follow(api, start, progress)
    assert progress.done == 7 and "7 of 10 files" in str(err.value)
    assert api.asked[0] == ("GET", "/v1/tree-jobs", {"id": "t", "wait": tree_jobs.POLL_WAIT_S})


def test_an_interrupted_tree_job_says_how_far_it_got():
    running = {"job": "t", "op": "remove", "src": "/a", "state": "running", "done": 4, "total": 9}
    api = Api(running, KeyboardInterrupt())
    with pytest.raises(tree_jobs.TreeJobDetached) as detached:
        tree_jobs.follow(api, {**running, "done": 0})
    assert detached.value.job["done"] == 4 and "4 of 9 files" in detached.value.message


def test_a_staged_bundle_is_followed_through_queued_and_running(monkeypatch):
    from hycloud.sdk import bundles

    monkeypatch.setattr(bundles, "stage", lambda http, source, config=None: "s" * 64)
    monkeypatch.setattr(bundles.bundle, "MAX_BODY", 1)
    api = Api({"state": "running", "job": "b"}, {"state": "succeeded", "files": []})
    api.first = {"state": "queued", "job": "b"}

    class Client:
        http, transfer = api, None

    assert bundles._post_bundle(Client(), b"body", "/") == {"state": "succeeded", "files": []}  # type: ignore[arg-type]
    assert api.asked[1:] == [("GET", "/v1/bundles/jobs", {"job": "b", "wait": bundles.JOB_WAIT_S})] * 2
