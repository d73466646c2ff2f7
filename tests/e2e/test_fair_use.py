"""Fair use under a one-user flood (issue 29, item 3).

One user (the flooder) sends relay requests for 12 distinct large files from 12 threads, each
waiting out a 429's Retry-After (at most 5 s) and asking again, so it stays at its limits (3 jobs,
2 requests/s, bursts of 4: set on its user record as `hycloud admin set-limits` does), while
two other users upload small files and relay their own large files. Asserted: no 5xx to anyone;
the flooder answered 429 with Retry-After; the flooder never has more than its 3 jobs queued or
running, so one of the others' relays waits behind at most those 3 and the other user's one
relay, never behind the flood's hundreds of requests (FOP orders by arrival and size, so a
flooder's job queued earlier is rightly ahead); the others' requests all succeed, each of their relays ready within JOB_WAIT_S and their request
latency p95 within LATENCY_P95_S.

The latency bounds are the local cloud's, not the service's: it serves about 6 requests a
second on the 2 cores it shares (every invocation is a Python process, DynamoDB is emulated in
Java), so any one user's requests, admitted or refused, slow every other request here; on AWS
each request has its own Lambda. Measured on that machine (load average 6 from other work):
others alone p50 0.75 s, p95 1.4 s, relays ready in 1.2-2.0 s.
"""

from __future__ import annotations

import os
import statistics
import threading
import time

import pytest
import requests
from boto3.dynamodb.conditions import Key

from hycloud_core.jobs.queue import QueueStore
from tests.e2e.conftest import _make_user

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.exclusive]
MiB = 1024 * 1024
FLOOD_S = 45.0  # the others' work must be done within this, under the flood
FLOOD_THREADS = 12  # still far over its 2 requests/s (24 saturated the 2-core local cloud: 504s)
FLOOD_FILES = 12  # distinct relay jobs the flooder can ask for (4 times its cap)
OTHER_FILES = 3  # relays each other user runs during the flood
FLOODER_JOBS, FLOODER_RATE, FLOODER_BURST = 3, 2, 4  # its per-user limits
FLOOD_PAUSE_S = 5.0
LATENCY_P95_S = 20.0  # the others' request latency bound (p95) during the flood, on the local cloud
JOB_WAIT_S = 30.0  # the others' relay: request to ready, at most, on the local cloud


def _p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))] if ordered else 0.0


def _set_limits(deployment, name: str, **limits: int) -> None:
    """Per-user limits on the profile record (the attributes `hycloud admin set-limits` sets)."""
    table = _table(deployment)
    names = {f"#{k}": k for k in limits}
    table.update_item(
        Key={"pk": f"USER#{name}", "sk": "PROFILE"},
        UpdateExpression="SET " + ", ".join(f"#{k} = :{k}" for k in limits),
        ExpressionAttributeNames=names,
        ExpressionAttributeValues={f":{k}": v for k, v in limits.items()},
    )


def _copies(user, prefix: str, count: int, tmp_path) -> list[str]:
    """A 3 MiB large file and `count` copies of it: each path is its own relay job."""
    (tmp_path / f"{user.name}.bin").write_bytes(os.urandom(3 * MiB))
    assert user.api().call("POST", "/v1/dirs", json={"path": prefix}).status_code == 201
    user.cli("put", str(tmp_path / f"{user.name}.bin"), f"{prefix}/src.bin")
    api = user.api()
    targets = [f"{prefix}/c{i}.bin" for i in range(count)]
    answers = [api.call("POST", "/v1/copy", json={"src": f"{prefix}/src.bin", "dst": dst}) for dst in targets]
    assert all(r.status_code == 201 for r in answers), [r.text for r in answers if r.status_code != 201]
    return targets


class Log:
    """Every answer of the flood: (who, what, status, seconds, Retry-After)."""

    def __init__(self) -> None:
        self.rows: list[tuple[str, str, int, float, str | None]] = []
        self.waits: list[float] = []
        self.queued: list[dict] = []  # the others' relays that had to wait for a worker
        self.flooder_jobs: list[int] = []  # the flooder's jobs queued or running, sampled
        self.lock = threading.Lock()

    def call(self, who: str, what: str, session, method: str, url: str, **kwargs) -> requests.Response | None:
        t0 = time.monotonic()
        try:
            r = session.request(method, url, timeout=60, **kwargs)
            status, after = r.status_code, r.headers.get("Retry-After")
        except requests.RequestException:
            r, status, after = None, 599, None
        with self.lock:
            self.rows.append((who, what, status, time.monotonic() - t0, after))
        return r


def _flooder(user, files: list[str], log: Log, done: threading.Event) -> None:
    """Relay requests for ever-new files as fast as the limits let it: a 429's Retry-After is
    waited out (at most FLOOD_PAUSE_S), as the client does, and the thread asks again."""
    api, i = user.api(), 0
    while not done.is_set():
        i += 1
        path = files[i % len(files)]
        r = log.call("flooder", "relay", api.session, "POST", api.base + "/v1/relay", json={"path": path})
        if r is not None and r.status_code == 429:
            done.wait(min(float(r.headers.get("Retry-After") or 1), FLOOD_PAUSE_S))


def _other(user, files: list[str], log: Log) -> None:
    """Small uploads and relays of its own files, one after the other, as a working user does."""
    api = user.api()
    for n, path in enumerate(files):
        body = os.urandom(2048)
        log.call(
            user.name,
            "put",
            api.session,
            "PUT",
            api.base + "/v1/files",
            params={"path": f"/w/s{n}"},
            data=body,
        )
        t0 = time.monotonic()
        r = log.call(user.name, "relay", api.session, "POST", api.base + "/v1/relay", json={"path": path})
        if r is not None and r.status_code == 200 and r.json().get("queue"):
            with log.lock:
                log.queued.append(r.json()["queue"])  # waiting for a worker
        while r is not None and r.status_code == 200 and r.json().get("state") == "running":
            if time.monotonic() - t0 > JOB_WAIT_S * 2:
                break
            params = {"path": path, "wait": 5}
            r = log.call(user.name, "status", api.session, "GET", api.base + "/v1/relay", params=params)
        if r is not None and r.status_code == 200 and r.json().get("state") == "ready":
            with log.lock:
                log.waits.append(time.monotonic() - t0)


def _table(deployment):
    return deployment.resource("dynamodb").Table(deployment.outputs["TableName"])


def _watch_jobs(deployment, user_id: str, log: Log, done: threading.Event) -> None:
    """Samples the flooder's queued and running jobs (the queue's own job items) every 0.5 s."""
    store = QueueStore(_table(deployment))
    while not done.wait(0.5):
        items = store.table.query(KeyConditionExpression=Key("pk").eq("FOPJ"))["Items"]
        log.flooder_jobs.append(sum(item["user"] == user_id for item in items))


def test_one_user_flood_leaves_others_unharmed(deployment, tmp_path):
    flooder, u1, u2 = (_make_user(deployment, p) for p in ("flooder", "worker1", "worker2"))
    api = u1.api()
    assert api.call("POST", "/v1/dirs", json={"path": "/w"}).status_code in (200, 201)
    assert u2.api().call("POST", "/v1/dirs", json={"path": "/w"}).status_code in (200, 201)
    flood_files = _copies(flooder, "/f", FLOOD_FILES, tmp_path)
    mine = {u.name: _copies(u, "/r", OTHER_FILES, tmp_path) for u in (u1, u2)}
    _set_limits(deployment, flooder.name, max_jobs=FLOODER_JOBS, rate_per_s=FLOODER_RATE, burst=FLOODER_BURST)

    log, done = Log(), threading.Event()
    flood = [
        threading.Thread(target=_flooder, args=(flooder, flood_files, log, done))
        for _ in range(FLOOD_THREADS)
    ]
    work = [threading.Thread(target=_other, args=(u, mine[u.name], log)) for u in (u1, u2)]
    flood.append(threading.Thread(target=_watch_jobs, args=(deployment, flooder.id, log, done)))
    for t in flood:
        t.start()
    time.sleep(2)  # the flood is on before the others start
    for t in work:
        t.start()
    for t in work:
        t.join(timeout=FLOOD_S)
    done.set()
    for t in flood:
        t.join(timeout=90)

    flood = [row for row in log.rows if row[0] == "flooder"]
    others = [row for row in log.rows if row[0] != "flooder"]
    by_status: dict[int, int] = {}
    for row in log.rows:
        by_status[row[2]] = by_status.get(row[2], 0) + 1
    lat = [row[3] for row in others if row[1] != "status"]  # status polls are held (wait=5) by design
    print(
        f"\nflood: {len(flood)} flooder requests, {len(others)} others'; statuses {sorted(by_status.items())}"
        f"\nothers: p50 {statistics.median(lat) if lat else 0:.2f} s, p95 {_p95(lat):.2f} s, max {max(lat, default=0):.2f} s;"
        f" relay waits {sorted(round(w, 2) for w in log.waits)} (of {2 * OTHER_FILES})"
        f"\nflooder 429s: {sum(r[2] == 429 for r in flood)}, with Retry-After: {sum(r[2] == 429 and bool(r[4]) for r in flood)}"
        f"; flooder latency p50 200: {statistics.median([r[3] for r in flood if r[2] == 200] or [0]):.2f} s,"
        f" 429: {statistics.median([r[3] for r in flood if r[2] == 429] or [0]):.2f} s"
        f"\nflooder jobs queued or running, most seen: {max(log.flooder_jobs, default=0)} (cap {FLOODER_JOBS});"
        f" others' relays queued: {[q['position'] for q in log.queued]} (positions)"
    )
    assert not [row for row in log.rows if row[2] >= 500], "5xx answers during the flood"
    limited = [row for row in flood if row[2] == 429]
    assert limited and all(row[4] and float(row[4]) > 0 for row in limited)
    assert all(200 <= row[2] < 300 for row in others), [row for row in others if not 200 <= row[2] < 300]
    assert max(log.flooder_jobs) <= FLOODER_JOBS  # the flooder never holds more workers than its cap
    ahead_at_most = FLOODER_JOBS + 1  # its capped jobs and the other user's one relay
    assert all(q["position"] <= ahead_at_most + 1 for q in log.queued)  # never behind the flood
    assert len(log.waits) == 2 * OTHER_FILES and max(log.waits) <= JOB_WAIT_S
    assert _p95(lat) <= LATENCY_P95_S


def test_measurements_no_link_can_make_are_refused(alice):
    """2^50 bytes in a microsecond (once accepted, and steering the scheduler) is refused."""
    api = alice.api()
    absurd = {"samples": [{"instance": "us-east-1", "bytes": 2**50, "seconds": 1e-6}]}
    r = api.call("POST", "/v1/measurements", json=absurd)
    assert r.status_code == 400 and r.json()["error"]["code"] == "implausible-measurement"
    too_fast = {"samples": [{"instance": "us-east-1", "bytes": 20 * 10**9, "seconds": 10.0}]}  # 16 Gbit/s
    assert api.call("POST", "/v1/measurements", json=too_fast).status_code == 400
    fine = {"samples": [{"instance": "us-east-1", "bytes": 50 * MiB, "seconds": 2.0}]}
    r = api.call("POST", "/v1/measurements", json=fine)
    assert r.status_code == 200 and r.json()["estimates"]["us-east-1"] <= 10e9 / 8
