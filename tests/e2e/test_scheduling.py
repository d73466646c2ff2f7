"""FOP scheduling of relay jobs on the deployment: order, related paths, the wait bound, adoption.

Each test sets the deployment's scheduling overrides (``SCHED/config``) for itself and restores
them. A burst is queued while dispatching is paused (``max_workers=0``) and released at once,
so what the tests see does not depend on how fast requests arrive.
"""

from __future__ import annotations

import io
import json
import os
import select
import subprocess
import time

import pytest

from hycloud.transfer.staging import stage
from hycloud_core import bundle
from hycloud_core.jobs.executions import execution_arn
from hycloud_core.jobs.queue import QueueStore
from hycloud_core.store.tree_jobs import TreeJobs, job_id
from infra.local import deploy as local
from tests.e2e.admin_cli import make_user
from tests.e2e.conftest import HYCLOUD

pytestmark = [pytest.mark.e2e, pytest.mark.exclusive]
MiB = 1024 * 1024
TREE_FILES = 205  # more entries than the deployment copies inline (200): a tree job
KNOBS = ("capacity", "max_workers", "max_wait_s", "default_bps", "throttle_bps", "order")


@pytest.fixture
def store(deployment):
    resource = deployment.resource("dynamodb")
    queue = QueueStore(resource.Table(deployment.outputs["TableName"]))
    queue.set_config(**dict.fromkeys(KNOBS))
    _settle(queue, deployment)
    yield queue
    queue.set_config(**dict.fromkeys(KNOBS))
    _settle(queue, deployment)


def _settle(queue: QueueStore, deployment, timeout_s: float = 120) -> None:
    """Wait until no job is queued or runs (earlier tests leave background deltas queued: they
    are started by the dispatcher, asked here), then forget the workers: each test starts from a
    fresh pool and an empty queue."""
    lam = deployment.client("lambda")
    pages = lam.get_paginator("list_functions").paginate()  # more functions than one page holds
    names = [
        f["FunctionName"] for page in pages for f in page["Functions"] if "Dispatcher" in f["FunctionName"]
    ]
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if not any(True for _ in queue.head(1)) and not any("job" in w for w in queue.workers()):
            break
        for name in names[:1]:
            lam.invoke(FunctionName=name, Payload=b"{}")
        time.sleep(0.5)
    for w in queue.workers():
        if "job" not in w:
            queue.table.delete_item(Key={"pk": "FOPW", "sk": w["sk"]})


@pytest.fixture(scope="module")
def user(deployment):
    return make_user(deployment, "sched")


@pytest.fixture
def fresh_user(deployment):
    """A user with no measured rates: its jobs' t_T comes from the deployment's default."""
    return make_user(deployment, "schedbg")


def _put(user, tmp_path, path: str, size: int) -> None:
    local = tmp_path / path.strip("/").replace("/", "_")
    local.write_bytes(os.urandom(size))
    user.sdk().put(str(local), path, parents=True, coded=False)  # the relay workers copy plain objects


def _relay(user, path: str) -> dict:
    answer = user.api().call("POST", "/v1/relay", json={"path": path})
    assert answer.status_code == 200, answer.text
    return answer.json()


def _status(user, path: str) -> dict:
    answer = user.api().call("GET", "/v1/relay", params={"path": path})
    assert answer.status_code == 200, answer.text
    return answer.json()


def _wait_ready(user, path: str) -> None:
    for _ in range(10):
        state = user.api().call("GET", "/v1/relay", params={"path": path, "wait": 20}).json()
        if state["state"] != "running":
            assert state["state"] == "ready", state
            return
    raise AssertionError(f"{path} never finished")


def _started(deployment, job: str) -> float:
    arn = execution_arn(deployment.outputs["RelayStateMachineArn"], job)
    return deployment.client("stepfunctions").describe_execution(executionArn=arn)["startDate"].timestamp()


def _resume(store, user, path: str, **config) -> None:
    """Lift the pause; a status request runs a dispatch pass at once."""
    store.set_config(**config)
    _status(user, path)


def _cli_waiting(user, *args: str) -> subprocess.Popen:
    """Start the CLI and return once it said its job waits in the queue."""
    env = {**os.environ, "HYCLOUD_ENDPOINT": user.deployment.api_url, "HYCLOUD_API_KEY": user.key}
    env["HYCLOUD_CONFIG"] = "/nonexistent/config.json"
    proc = subprocess.Popen(
        [HYCLOUD, *args], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        ready, _, _ = select.select([proc.stderr], [], [], 1)
        if ready and "queued at position" in proc.stderr.readline():
            return proc
    proc.kill()
    raise AssertionError("the CLI never reported a queued job")


def test_burst_starts_small_before_large_within_capacity(deployment, store, user, tmp_path):
    # the assumed link (0.25 MiB/s) makes t_T dominate the arrival spread
    store.set_config(capacity=1, max_workers=1, throttle_bps=16 * MiB, default_bps=MiB // 4, max_wait_s=60.0)
    _put(user, tmp_path, "/b/first", 5 * MiB // 2)
    first = _relay(user, "/b/first")
    assert "queue" not in first  # an idle system starts the job in the request
    assert _started(deployment, first["job"]) > 0
    _wait_ready(user, "/b/first")
    store.set_config(max_workers=0)  # paused while the burst arrives
    files = {"/b/l1": 5 * MiB, "/b/s1": 5 * MiB // 2, "/b/l2": 5 * MiB, "/b/s2": 5 * MiB // 2}
    for path, size in files.items():
        _put(user, tmp_path, path, size)
    answers = {path: _relay(user, path) for path in files}
    places = {p: _status(user, p)["queue"] for p in ("/b/s1", "/b/s2", "/b/l1", "/b/l2")}
    assert [place["position"] for place in places.values()] == [1, 2, 3, 4], places
    estimates = [place["estimated_start_s"] for place in places.values()]
    assert estimates == sorted(estimates) and estimates[0] == 0 and estimates[-1] >= 10 * 2 * 0.9
    _resume(store, user, "/b/s1", max_workers=1)
    for path in files:
        _wait_ready(user, path)
    starts = {p: _started(deployment, answers[p]["job"]) for p in files}
    assert sorted(files, key=starts.get) == ["/b/s1", "/b/s2", "/b/l1", "/b/l2"], starts
    times = sorted(starts.values())
    least = 2.5 / 16 * 0.9  # capacity 1: a job starts only after the one before it ran
    assert all(b - a >= least for a, b in zip(times, times[1:], strict=False)), starts


def test_a_large_job_is_not_overtaken_by_jobs_arriving_after_the_wait_bound(
    deployment, store, user, tmp_path
):
    store.set_config(capacity=1, max_workers=0, throttle_bps=16 * MiB, default_bps=MiB, max_wait_s=1.0)
    for path, size in {"/w/large": 6 * MiB, "/w/small": 5 * MiB // 2}.items():
        _put(user, tmp_path, path, size)
    large = _relay(user, "/w/large")
    time.sleep(1.2)  # past large's arrival + max_wait_s: its queue key is now below any new arrival's
    small = _relay(user, "/w/small")
    assert large["queue"]["position"] == 1 and small["queue"]["position"] == 2  # behind although smaller
    got = tmp_path / "small.out"
    cli = _cli_waiting(user, "--json", "get", "--via", "relay", "/w/small", str(got))
    _resume(store, user, "/w/large", max_workers=1)
    out, err = cli.communicate(timeout=120)
    assert cli.returncode == 0, err
    assert json.loads(out)["queue"]["position"] == 2  # what the CLI saw, in its JSON answer
    assert got.read_bytes() == (tmp_path / "w_small").read_bytes()
    _wait_ready(user, "/w/large")
    assert _started(deployment, large["job"]) < _started(deployment, small["job"])


def test_related_paths_keep_request_order_unrelated_ones_overtake(deployment, store, user, tmp_path):
    store.set_config(capacity=1, max_workers=0, throttle_bps=16 * MiB, default_bps=MiB // 4, max_wait_s=60.0)
    _put(user, tmp_path, "/r/f", 5 * MiB)
    _put(user, tmp_path, "/o/small", 5 * MiB // 2)
    first = _relay(user, "/r/f")  # version 1, large
    # Version 2, small: FOP alone would run it first. Written after a delete, so no delta from
    # version 1 is computed at commit: that job would cache both versions and leave neither
    # relay anything to do.
    user.sdk().rm("/r/f")
    _put(user, tmp_path, "/r/f", 5 * MiB // 2)
    second = _relay(user, "/r/f")
    other = _relay(user, "/o/small")
    assert first["job"] != second["job"] and "queue" in second and "queue" in other
    cli = _cli_waiting(user, "-v", "get", "--via", "relay", "/r/f", str(tmp_path / "f.out"))
    _resume(store, user, "/o/small", max_workers=1)
    out, err = cli.communicate(timeout=120)
    assert cli.returncode == 0 and "queued at position" in out, out + err  # -v names the place
    assert (tmp_path / "f.out").read_bytes() == (tmp_path / "r_f").read_bytes()
    _wait_ready(user, "/o/small")
    jobs = {"first": first, "second": second, "other": other}
    start = {name: _started(deployment, job["job"]) for name, job in jobs.items()}
    assert start["other"] < start["first"] < start["second"], start


def _in_use(store) -> list[dict]:
    return [w for w in store.workers() if w["state"] == "active"]


def _worker_of(store, job: str) -> dict:
    return next((w for w in store.workers() if w.get("job") == job), {})


def test_relay_workers_rise_when_throttled_and_fall_lazily(deployment, store, user, tmp_path):
    store.set_config(capacity=1, max_workers=2, throttle_bps=0, default_bps=MiB)
    _put(user, tmp_path, "/a/warm", 8 * MiB)
    _wait_ready(user, _relay(user, "/a/warm")["path"])
    (worker,) = store.workers()
    initial = int(worker["initial_bw"])  # BW_o, measured unthrottled
    throttle = max(1, min(MiB // 2, initial // 20))  # <= theta_c of BW_o
    # About 20 s at the limit (stopped early below, though the run goes on in its function): on a
    # loaded machine the request that finds every worker congested may come seconds after the
    # first one's first report, and must find that job still running.
    size = max(3 * MiB, throttle * 20)
    for path in ("/a/one", "/a/two"):
        _put(user, tmp_path, path, size)
    store.set_config(throttle_bps=throttle)
    one = _relay(user, "/a/one")
    assert "queue" not in one, one
    deadline = time.monotonic() + 30  # the run's first throughput report (a busy machine starts it late)
    while "job_bw" not in _worker_of(store, one["job"]) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert "job_bw" in _worker_of(store, one["job"]), (one, store.workers())
    two = _relay(user, "/a/two")  # every worker congested: a worker is added and takes it at once
    assert "queue" not in two, two
    assert len(_in_use(store)) == 2, store.workers()
    store.set_config(throttle_bps=0)
    _status(user, "/a/one")  # a pass: both still busy at their throttled rate, so none retires
    assert len(_in_use(store)) == 2, store.workers()
    sfn = deployment.client("stepfunctions")
    for job in (one, two):
        sfn.stop_execution(executionArn=execution_arn(deployment.outputs["RelayStateMachineArn"], job["job"]))
    _put(user, tmp_path, "/a/four", 3 * MiB)
    _wait_ready(user, _relay(user, "/a/four")["path"])  # all idle, so at leisure: one retires
    deadline = time.monotonic() + 20
    while len(store.workers()) != 1 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert len(store.workers()) == 1


def _execution_start(deployment, machine: str, job: str, timeout_s: float = 60) -> float:
    """When the job's execution started, waiting for it to be dispatched."""
    sfn, deadline = deployment.client("stepfunctions"), time.monotonic() + timeout_s
    while True:
        try:
            desc = sfn.describe_execution(executionArn=execution_arn(machine, job))
            return desc["startDate"].timestamp()
        except sfn.exceptions.ExecutionDoesNotExist:
            assert time.monotonic() < deadline, f"{job} never started"
            time.sleep(0.3)


def test_commit_time_delta_is_background_work_behind_user_relays(deployment, store, fresh_user, tmp_path):
    user = fresh_user
    store.set_config(capacity=1, max_workers=0, throttle_bps=16 * MiB, default_bps=MiB // 4, max_wait_s=60.0)
    size = 5 * MiB // 2
    _put(user, tmp_path, "/c/doc", size)
    _put(user, tmp_path, "/c/doc", size)  # version 2: its commit queues the delta from version 1
    machine = deployment.outputs["DeltaStateMachineArn"]
    (delta,) = [job for job in store.head() if job.machine == machine and job.user == user.id]
    assert delta.tt_us >= 2 * size / (MiB // 4) * 1e6 * 0.99  # both versions to read: not ~0
    _put(user, tmp_path, "/c/big", 2 * size)
    relay = _relay(user, "/c/big")  # later, and twice the bytes: FOP alone would run it second
    assert relay["queue"]["position"] == 1, relay
    _resume(store, user, "/c/big", max_workers=1)
    _wait_ready(user, "/c/big")
    assert _started(deployment, relay["job"]) < _execution_start(deployment, machine, delta.job)


def test_a_queued_tree_job_and_a_queued_relay_start_in_fop_order(deployment, store, user, tmp_path):
    store.set_config(capacity=1, max_workers=0, throttle_bps=16 * MiB, default_bps=MiB // 4, max_wait_s=60.0)
    names = [f"f{i:03d}" for i in range(TREE_FILES)]
    user.sdk().mkdir("/t/src", parents=True)
    members = ((f"/t/src/{n}", b"%d\n" % i) for i, n in enumerate(names))  # one bundle: the tree is setup
    body = bundle.pack((bundle.member_of(path, data), data) for path, data in members)
    posted = user.api().call(
        "POST", "/v1/bundles", data=body, headers={"Content-Type": "application/octet-stream"}
    )
    assert posted.status_code == 200 and {f["status"] for f in posted.json()["files"]} == {"ok"}, posted.text
    _put(user, tmp_path, "/t/big", 5 * MiB)
    relay = _relay(user, "/t/big")  # first, but 20 s at the assumed link
    cli = _cli_waiting(user, "cp", "-r", "/t/src", "/t/dst")  # a few hundred bytes: it goes first
    tree_id = job_id("copy", "/t/src", "/t/dst")
    place = user.api().call("GET", "/v1/tree-jobs", params={"id": tree_id}).json()["queue"]
    assert place["position"] == 1 and _status(user, "/t/big")["queue"]["position"] == 2, place
    _resume(store, user, "/t/big", max_workers=1)
    out, err = cli.communicate(timeout=120)
    assert cli.returncode == 0, out + err
    _wait_ready(user, "/t/big")
    execution = TreeJobs(store.table).get(user.id, tree_id).execution
    tree_start = _execution_start(deployment, deployment.outputs["TreeJobStateMachineArn"], execution)
    assert tree_start < _started(deployment, relay["job"])
    copied = sorted(p.name for p in (user.ns_dir() / "t" / "dst").iterdir())
    assert copied == names


def _repair_state(user, job: str) -> dict:
    answer = user.api().call("GET", "/v1/coded/repair", params={"job": job})
    assert answer.status_code == 200, answer.text
    return answer.json()


def test_a_repair_job_is_background_work_in_the_queue(deployment, store, fresh_user, tmp_path):
    """A coded-block repair waits in the FOP queue behind user relays that arrive after it."""
    user, regions = fresh_user, list(local.instances())
    if len(regions) < 3 or "RepairStateMachineArn" not in deployment.outputs:
        pytest.skip("repair jobs need three instances (hycloud:regions)")
    store.set_config(capacity=1, max_workers=0, throttle_bps=16 * MiB, default_bps=MiB // 4, max_wait_s=60.0)
    coded = tmp_path / "coded.bin"
    coded.write_bytes(os.urandom(3 * MiB))
    user.sdk().put(str(coded), "/q/coded.bin", parents=True, coded=True)
    started = user.api().call("POST", "/v1/coded/repair", json={"region": regions[1]})
    assert started.status_code == 202, started.text
    repair = started.json()
    assert repair["state"] == "queued" and repair["queue"]["position"] == 1, repair
    _put(user, tmp_path, "/q/big", 5 * MiB)
    relay = _relay(user, "/q/big")  # later, but user-facing: it goes first
    assert relay["queue"]["position"] == 1, relay
    assert _repair_state(user, repair["job"])["queue"]["position"] == 2
    assert (
        make_user(deployment, "other")
        .api()
        .call("GET", "/v1/coded/repair", params={"job": repair["job"]})
        .status_code
        == 404
    )  # another user's job is not there
    _resume(store, user, "/q/big", max_workers=1)
    _wait_ready(user, "/q/big")
    deadline = time.monotonic() + 120
    while (state := _repair_state(user, repair["job"]))["state"] in ("queued", "running"):
        assert time.monotonic() < deadline, state
        time.sleep(0.3)
    assert state["state"] == "succeeded" and state["result"]["unrecoverable"] == 0, state
    machine = deployment.outputs["RepairStateMachineArn"]
    assert _started(deployment, relay["job"]) < _execution_start(deployment, machine, repair["job"])


def test_a_staged_bundle_is_committed_by_a_queued_job(deployment, store, fresh_user, tmp_path):
    """A bundle too large for a request is a transfer: its commit waits in the FOP queue, says
    its place, and then reports each member on its own."""
    user = fresh_user
    store.set_config(capacity=1, max_workers=0, throttle_bps=16 * MiB, default_bps=MiB // 4, max_wait_s=60.0)
    files = [(f"/sb/f{i}.bin", os.urandom(1536 * 1024)) for i in range(3)]  # 4.5 MiB: over a request
    body = bundle.pack((bundle.member_of(path, data), data) for path, data in files)
    staged = stage(user.sdk().http, io.BytesIO(body))
    posted = user.api().call("POST", "/v1/bundles", params={"staged": staged, "root": "/sb"})
    assert posted.status_code == 202, posted.text
    job = posted.json()
    assert job["state"] == "queued" and job["queue"]["position"] == 1, job
    assert user.api().call("GET", "/v1/stat", params={"path": "/sb/f0.bin"}).status_code == 404
    other = make_user(deployment, "other").api().call("GET", "/v1/bundles/jobs", params={"job": job["job"]})
    assert other.status_code == 404
    store.set_config(max_workers=1)
    deadline = time.monotonic() + 120
    while job["state"] in ("queued", "running"):
        assert time.monotonic() < deadline, job
        answer = user.api().call("GET", "/v1/bundles/jobs", params={"job": job["job"], "wait": 5})
        assert answer.status_code == 200, answer.text
        job = answer.json()
    assert job["state"] == "succeeded", job
    assert [(f["path"], f["status"]) for f in job["files"]] == [(path, "ok") for path, _ in files]
    for path, data in files:
        assert (user.ns_dir() / path.lstrip("/")).read_bytes() == data
    machine = deployment.outputs["BundleJobStateMachineArn"]
    assert _execution_start(deployment, machine, job["job"]) > 0
    again = user.api().call("POST", "/v1/bundles", params={"staged": staged, "root": "/sb"})
    assert again.status_code == 409 and again.json()["error"]["code"] == "not-staged"


def test_a_staged_bundle_member_outside_its_root_is_refused_alone(deployment, store, fresh_user):
    user = fresh_user
    files = [("/in/a.bin", os.urandom(MiB)), ("/out/b.bin", os.urandom(MiB))]  # any bundle may be staged
    body = bundle.pack((bundle.member_of(path, data), data) for path, data in files)
    staged = stage(user.sdk().http, io.BytesIO(body))
    job = user.api().call("POST", "/v1/bundles", params={"staged": staged, "root": "/in"}).json()
    while job["state"] in ("queued", "running"):
        job = user.api().call("GET", "/v1/bundles/jobs", params={"job": job["job"], "wait": 5}).json()
    assert [(f["path"], f["status"]) for f in job["files"]] == [("/in/a.bin", "ok"), ("/out/b.bin", "error")]
    assert job["files"][1]["error"]["code"] == "outside-root"
    assert user.api().call("GET", "/v1/stat", params={"path": "/out/b.bin"}).status_code == 404
