"""The FOP job queue and the relay workers, kept in the records table (seed 000 §III-C).

Items (all in the one table, so the controller and the dispatcher share them):

* ``SCHED`` / ``config``: run-time overrides of :class:`SchedConfig`; ``SCHED`` / ``seq``: the
  request counter (request order among related paths).
* ``FOPQ`` / ``queue_sort_key(key, seq)``: a waiting job. A ``Query`` reads the smallest key first.
  The key is :func:`queue_key`: FOP with t_T capped at W, plus W for background work.
* ``FOPJ`` / ``<execution name>``: a job's state (``queued`` or ``running``, its worker), so a
  second request for the job finds it and the client can be told its position.
* ``FOPW`` / ``<worker id>``: a relay worker, one concurrent execution slot, with the job it runs
  and its throughput reports (``initial_bw`` = BW_o, ``available_bw`` = BW_a, bytes/s).
* ``FOPM#HERE#<user>#<path>`` / seq and ``FOPM#BELOW#<user>#<ancestor>`` / seq: path markers
  (control/fop.py) held from enqueue until the job ends, so a job on a related path waits for
  every earlier one.
* ``LIMIT#<user>`` / ``JOBS``: how many jobs the user has queued or running (``n``), moved by the
  transactions that queue and release a job; queueing is refused past the user's cap
  (control/limits.py).

Claiming a job for a worker is one transaction (the worker is free, the queue item still there),
so concurrent dispatchers never start a job twice nor put two jobs on one worker.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from dataclasses import dataclass, fields
from decimal import Decimal
from typing import Any

from boto3.dynamodb.conditions import Key

from ..control import fop
from ..control.limits import JOBS_SK, LIMIT_PREFIX, job_cap, jobs_refusal
from ..errors import ConflictError
from ..store.locks import Lease, leased_paths
from ..store.records import query_all

QUEUE, JOBS, WORKERS, SCHED = "FOPQ", "FOPJ", "FOPW", "SCHED"
MARKER_PREFIX = "FOPM#"
USER, BACKGROUND = "user", "background"  # priority classes: what a client waits for, and the rest


def _env_float(name: str, default: float) -> float:
    value = os.environ.get(name)
    return float(value) if value else default


@dataclass(frozen=True)
class SchedConfig:
    """Deployment settings (environment, from CDK context), overridable at run time by ``SCHED/config``."""

    capacity: int = 16  # relay workers kept at least (concurrent job executions)
    max_workers: int = 32  # the cap adoption may grow to
    max_wait_s: float = 300.0  # starvation bound: t_T counts at most this much in the queue key
    theta_c: float = 0.20
    theta_l: float = 0.60
    default_bps: float = 10 * 1024 * 1024  # a user's link when never measured
    order: str = "fop"  # or "fifo" (the benchmark's peer)
    throttle_bps: int = 0  # per-worker throughput limit handed to relay runs (0: none)

    @classmethod
    def from_environment(cls) -> SchedConfig:
        d = cls()
        return cls(
            capacity=int(_env_float("HYCLOUD_JOB_CAPACITY", d.capacity)),
            max_workers=int(_env_float("HYCLOUD_MAX_RELAY_WORKERS", d.max_workers)),
            max_wait_s=_env_float("HYCLOUD_FOP_MAX_WAIT_S", d.max_wait_s),
            theta_c=_env_float("HYCLOUD_THETA_C", d.theta_c),
            theta_l=_env_float("HYCLOUD_THETA_L", d.theta_l),
            default_bps=_env_float("HYCLOUD_FOP_DEFAULT_BPS", d.default_bps),
            throttle_bps=int(_env_float("HYCLOUD_RELAY_THROTTLE_BPS", d.throttle_bps)),
        )

    def merged(self, item: dict[str, Any] | None) -> SchedConfig:
        if not item:
            return self
        values = {}
        for f in fields(self):
            if f.name in item:
                kind = type(getattr(self, f.name))
                values[f.name] = kind(item[f.name]) if kind is not float else float(item[f.name])
        return SchedConfig(**{**self.__dict__, **values})


def queue_key(arrival: float, transfer_s: float, priority: str, config: SchedConfig) -> float:
    """FOP(x) = t_A + min(t_T, W), and W more for background work (a commit-time delta).

    A user job's key is at most t_A + W and a background job's at least t_A + W, so background
    work waits behind every user job that arrives within W of it, yet never longer than 2W
    itself, and no job arriving more than W after a user job starts before it (the bound holds).
    FIFO (the benchmark's peer) orders by arrival alone.
    """
    if config.order == "fifo":
        return arrival
    delay = config.max_wait_s if priority == BACKGROUND else 0.0
    return arrival + delay + min(transfer_s, config.max_wait_s)


@dataclass(frozen=True, kw_only=True)
class QueueEntry:
    """A job as its caller queues it: the execution `job` of state machine `machine`, told
    `input` (JSON: a spec's event), for `user`.

    `paths` (a file, or a tree's source and destination) keep jobs on related paths in request
    order; `size` bytes at `seconds_per_byte` (the user's measured rate) plus `extra_s` (what is
    not bytes: a tree job's per-entry work) make its estimated transfer time t_T, and `priority`
    its class, hence its queue place. `owner` names the path leases the job took at request time
    (a tree job): they do not hold it back, and are taken again when it starts. `now` is its
    arrival (the present when None)."""

    job: str
    machine: str
    input: str
    user: str
    paths: tuple[str, ...] = ()
    size: int = 0
    seconds_per_byte: float = 0.0
    extra_s: float = 0.0
    priority: str = USER
    owner: str = ""
    now: float | None = None

    def __post_init__(self) -> None:
        if self.priority not in (USER, BACKGROUND):
            raise ValueError(f"priority must be {USER!r} or {BACKGROUND!r}, not {self.priority!r}")
        if self.size < 0 or self.seconds_per_byte < 0 or self.extra_s < 0:
            raise ValueError("a queue entry's size and times are never negative")

    @property
    def transfer_s(self) -> float:
        """t_T before the starvation bound caps it."""
        return self.size * self.seconds_per_byte + self.extra_s


@dataclass(frozen=True)
class QueuedJob:
    job: str
    machine: str
    input: str  # the execution input, JSON
    user: str
    sort_key: str
    seq: int
    arrival_us: int
    tt_us: int  # estimated transfer time
    paths: tuple[str, ...]
    size: int
    owner: str = ""  # the lease owner of a job that holds path leases (a tree job)

    def operation(self) -> fop.Operation | None:
        if not self.paths:
            return None
        dest = self.paths[1] if len(self.paths) > 1 else None
        return fop.Operation(self.job, fop.OpKind.DOWNLOAD, self.paths[0], self.arrival_us / 1e6, dest=dest)


def _queued(item: dict[str, Any]) -> QueuedJob:
    return QueuedJob(
        job=item["job"],
        machine=item["machine"],
        input=item["input"],
        user=item["user"],
        sort_key=item["sk"],
        seq=int(item["seq"]),
        arrival_us=int(item["arrival_us"]),
        tt_us=int(item["tt_us"]),
        paths=tuple(item.get("paths", [])),
        size=int(item.get("size", 0)),
        owner=item.get("owner", ""),
    )


class QueueStore:
    def __init__(self, table: Any) -> None:
        self.table = table
        self.client = table.meta.client  # a resource's client: plain Python values, serialized for us
        self._failed = self.client.exceptions.TransactionCanceledException

    # configuration -------------------------------------------------------------------------
    def config(self, base: SchedConfig | None = None) -> SchedConfig:
        item = self.table.get_item(Key={"pk": SCHED, "sk": "config"}, ConsistentRead=True).get("Item")
        return (base or SchedConfig.from_environment()).merged(item)

    def set_config(self, **values: Any) -> None:
        """Run-time overrides (admin and tests); ``None`` removes one."""
        item = self.table.get_item(Key={"pk": SCHED, "sk": "config"}, ConsistentRead=True).get("Item") or {}
        item.update({k: Decimal(str(v)) if isinstance(v, float) else v for k, v in values.items()})
        item = {k: v for k, v in item.items() if v is not None}
        self.table.put_item(Item={**item, "pk": SCHED, "sk": "config"})

    def _next_seq(self) -> int:
        answer = self.table.update_item(
            Key={"pk": SCHED, "sk": "seq"},
            UpdateExpression="ADD n :one",
            ExpressionAttributeValues={":one": 1},
            ReturnValues="UPDATED_NEW",
        )
        return int(answer["Attributes"]["n"])

    # the queue -----------------------------------------------------------------------------
    def enqueue(self, entry: QueueEntry, config: SchedConfig) -> bool:
        """Queue a job once (False when it is already queued or running); 429 (too-many-jobs) when
        the user already has as many jobs queued or running as the request's cap allows."""
        now = time.time() if entry.now is None else entry.now
        job, user, seq = entry.job, entry.user, self._next_seq()
        tt = min(entry.transfer_s, config.max_wait_s)
        sort_key = fop.queue_sort_key(queue_key(now, tt, entry.priority, config), seq)
        common = {
            "job": job,
            "user": user,
            "seq": seq,
            "paths": [fop.normalise(p) for p in entry.paths],
            "size": entry.size,
            "priority": entry.priority,
        }
        item = {
            **common,
            "pk": QUEUE,
            "sk": sort_key,
            "machine": entry.machine,
            "input": entry.input,
            "arrival_us": round(now * 1e6),
            "tt_us": round(tt * 1e6),
            **({"owner": entry.owner} if entry.owner else {}),
        }
        actions = [
            {
                "Put": {
                    "TableName": self.table.name,
                    "Item": {**common, "pk": JOBS, "sk": job, "state": "queued", "qsk": sort_key},
                    "ConditionExpression": "attribute_not_exists(pk)",
                }
            },
            {"Put": {"TableName": self.table.name, "Item": item}},
        ]
        actions += [
            {"Put": {"TableName": self.table.name, "Item": {"pk": pk, "sk": sk, "job": job}}}
            for pk, sk in self._markers(_queued(item))
        ]
        cap = job_cap(user)
        actions.append(self._count(user, 1, cap))
        try:
            self.client.transact_write_items(TransactItems=actions)
            return True
        except self._failed as err:
            if cap is not None and self._over_cap(err, len(actions) - 1, job, user, cap):
                raise jobs_refusal(cap) from None
            return False

    def _over_cap(self, err: Exception, count_action: int, job: str, user: str, cap: int) -> bool:
        """Whether the queueing failed on the cap (and not because the job is queued already)."""
        if getattr(err, "response", {}).get("CancellationReasons"):
            return _cancelled_by(err, count_action) and not _cancelled_by(err, 0)
        return self.job(job) is None and self.open_jobs(user) >= cap  # no reasons given: look

    def _count(self, user: str, delta: int, cap: int | None = None) -> dict[str, Any]:
        """The transaction action that moves the user's job count, refused at `cap`."""
        update: dict[str, Any] = {
            "TableName": self.table.name,
            "Key": {"pk": f"{LIMIT_PREFIX}{user}", "sk": JOBS_SK},
            "UpdateExpression": "ADD n :d",
            "ExpressionAttributeValues": {":d": delta},
        }
        if cap is not None:
            update["ConditionExpression"] = "attribute_not_exists(n) OR n < :cap"
            update["ExpressionAttributeValues"][":cap"] = cap
        return {"Update": update}

    def open_jobs(self, user: str) -> int:
        """The user's jobs queued or running, as counted for the cap."""
        item = self.table.get_item(Key={"pk": f"{LIMIT_PREFIX}{user}", "sk": JOBS_SK}, ConsistentRead=True)
        return int(item.get("Item", {}).get("n", 0))

    def head(self, limit: int = 50) -> Iterator[QueuedJob]:
        """Waiting jobs, smallest queue key first."""
        kwargs: dict[str, Any] = {"KeyConditionExpression": Key("pk").eq(QUEUE), "Limit": limit}
        while True:
            page = self.table.query(**kwargs)
            yield from (_queued(i) for i in page["Items"])
            if "LastEvaluatedKey" not in page:
                return
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    def job(self, job: str) -> dict[str, Any] | None:
        item: dict[str, Any] | None = self.table.get_item(
            Key={"pk": JOBS, "sk": job}, ConsistentRead=True
        ).get("Item")
        return item

    def position(self, job: str) -> dict[str, Any] | None:
        """1-based place among waiting jobs and the estimated seconds until it starts, or None."""
        item = self.job(job)
        if item is None or item["state"] != "queued":
            return None
        ahead = self.table.query(
            KeyConditionExpression=Key("pk").eq(QUEUE) & Key("sk").lt(item["qsk"]),
            ProjectionExpression="tt_us",
        )["Items"]
        workers = max(1, sum(w["state"] == "active" for w in self.workers()))
        seconds = sum(int(i["tt_us"]) for i in ahead) / 1e6 / workers
        return {"position": len(ahead) + 1, "estimated_start_s": round(seconds, 3), "workers": workers}

    # related paths -------------------------------------------------------------------------
    def _markers(self, job: QueuedJob) -> set[tuple[str, str]]:
        op = job.operation()
        if op is None:
            return set()
        return {(MARKER_PREFIX + pk, sk) for pk, sk in fop.marker_keys(op, job.user, job.seq)}

    def blocked(self, job: QueuedJob, queued_owners: frozenset[str] = frozenset()) -> bool:
        """Whether an earlier job on a related path is still queued or running, or a path lease
        (store/locks.py: a tree copy, move or removal in progress) covers a related path.

        Leases of waiting jobs (`queued_owners`, the job's own among them) do not count: their
        markers order them, and an earlier job must not wait for a later one's leases."""
        op = job.operation()
        if op is None:
            return False
        now, ignored = int(time.time()), queued_owners | {job.owner}
        leases = leased_paths(self.table, job.user, with_owner=True)
        others = [path for path, owner, expires in leases if owner not in ignored and expires >= now]
        if fop.paths_related(op.paths(), others):
            return True
        for part in fop.blocking_partitions(op, job.user):
            page = self.table.query(
                KeyConditionExpression=Key("pk").eq(MARKER_PREFIX + part) & Key("sk").lt(f"{job.seq:012d}"),
                Limit=1,
                ConsistentRead=True,
            )
            if page["Items"]:
                return True
        return False

    def retake_leases(self, job: QueuedJob) -> bool:
        """A job that holds path leases takes them again as it starts: they may have expired
        while it waited (False when another operation holds one now)."""
        if not job.owner:
            return True
        lease = Lease(self.table, job.user, owner=job.owner)
        try:
            for path in sorted(job.paths, key=lambda p: p.count("/")):
                lease.acquire(path, 0)
        except ConflictError:
            return False
        return True

    # workers -------------------------------------------------------------------------------
    def workers(self) -> list[dict[str, Any]]:
        return query_all(self.table, Key("pk").eq(WORKERS), consistent=True)

    def add_worker(self, worker: str, instance: str, nominal_bw: int = 0) -> bool:
        """A new worker; its BW_o is the instance's measured nominal rate when there is one."""
        item: dict[str, Any] = {"pk": WORKERS, "sk": worker, "state": "active", "instance": instance}
        if nominal_bw:
            item["initial_bw"] = nominal_bw
        try:
            self.table.put_item(
                Item=item,
                ConditionExpression="attribute_not_exists(pk)",
            )
            return True
        except self.client.exceptions.ConditionalCheckFailedException:
            return False

    def retire_worker(self, worker: str) -> None:
        """Lazy: the worker takes no new job; it is removed once idle."""
        self.table.update_item(
            Key={"pk": WORKERS, "sk": worker},
            UpdateExpression="SET #s = :r",
            ConditionExpression="attribute_exists(pk)",
            ExpressionAttributeNames={"#s": "state"},
            ExpressionAttributeValues={":r": "retiring"},
        )
        self._drop_if_idle(worker)

    def _drop_if_idle(self, worker: str) -> None:
        try:
            self.table.delete_item(
                Key={"pk": WORKERS, "sk": worker},
                ConditionExpression="#s = :r AND attribute_not_exists(job)",
                ExpressionAttributeNames={"#s": "state"},
                ExpressionAttributeValues={":r": "retiring"},
            )
        except self.client.exceptions.ConditionalCheckFailedException:
            pass

    def claim(self, job: QueuedJob, worker: str, now: float | None = None) -> bool:
        """Move a waiting job onto a free active worker, atomically."""
        now_us = round((time.time() if now is None else now) * 1e6)
        name = self.table.name
        actions = [
            {
                "Update": {
                    "TableName": name,
                    "Key": {"pk": WORKERS, "sk": worker},
                    "UpdateExpression": "SET job = :j, machine = :m, since_us = :t REMOVE job_bw",
                    "ConditionExpression": "attribute_exists(pk) AND #s = :a AND attribute_not_exists(job)",
                    "ExpressionAttributeNames": {"#s": "state"},
                    "ExpressionAttributeValues": {
                        ":j": job.job,
                        ":m": job.machine,
                        ":t": now_us,
                        ":a": "active",
                    },
                }
            },
            {
                "Delete": {
                    "TableName": name,
                    "Key": {"pk": QUEUE, "sk": job.sort_key},
                    "ConditionExpression": "attribute_exists(pk)",
                }
            },
            {
                "Update": {
                    "TableName": name,
                    "Key": {"pk": JOBS, "sk": job.job},
                    "UpdateExpression": "SET #s = :r, worker = :w, started_us = :t",
                    "ExpressionAttributeNames": {"#s": "state"},
                    "ExpressionAttributeValues": {":r": "running", ":w": worker, ":t": now_us},
                }
            },
        ]
        try:
            self.client.transact_write_items(TransactItems=actions)
            return True
        except self._failed:
            return False

    def release(self, job: str) -> bool:
        """A job ended: free its worker and its path markers (False when already released)."""
        item = self.job(job)
        if item is None or item["state"] != "running":
            return False
        worker = item["worker"]
        queued = QueuedJob(
            job, "", "", item["user"], "", int(item["seq"]), 0, 0, tuple(item.get("paths", [])), 0
        )
        actions = [
            {
                "Delete": {
                    "TableName": self.table.name,
                    "Key": {"pk": JOBS, "sk": job},
                    "ConditionExpression": "#s = :r",
                    "ExpressionAttributeNames": {"#s": "state"},
                    "ExpressionAttributeValues": {":r": "running"},
                }
            },
            {
                "Update": {
                    "TableName": self.table.name,
                    "Key": {"pk": WORKERS, "sk": worker},
                    "UpdateExpression": "REMOVE job, machine, since_us",
                    "ConditionExpression": "job = :j",
                    "ExpressionAttributeValues": {":j": job},
                }
            },
        ]
        actions += [
            {"Delete": {"TableName": self.table.name, "Key": {"pk": pk, "sk": sk}}}
            for pk, sk in self._markers(queued)
        ]
        actions.append(self._count(item["user"], -1))
        try:
            self.client.transact_write_items(TransactItems=actions)
        except self._failed:
            return False
        self._drop_if_idle(worker)
        return True


def _cancelled_by(err: Exception, index: int) -> bool:
    """Whether action `index` of a cancelled transaction failed its condition."""
    reasons = getattr(err, "response", {}).get("CancellationReasons") or []
    return index < len(reasons) and reasons[index].get("Code") == "ConditionalCheckFailed"


def report_throughput(table: Any, worker: str, bytes_per_s: float) -> None:
    """A relay run's throughput: BW_a now, and BW_o the first time the worker reports."""
    rate = max(1, round(bytes_per_s))
    try:
        table.update_item(
            Key={"pk": WORKERS, "sk": worker},
            UpdateExpression="SET available_bw = :r, job_bw = :r, initial_bw = if_not_exists(initial_bw, :r)",
            ConditionExpression="attribute_exists(pk)",
            ExpressionAttributeValues={":r": rate},
        )
    except table.meta.client.exceptions.ConditionalCheckFailedException:
        pass  # the worker was retired meanwhile


class Pacer:
    """Holds a relay run to a per-worker throughput limit and reports its rate as it goes."""

    REPORT_EVERY_S = 0.5

    def __init__(self, table: Any, worker: str | None, limit_bps: int = 0) -> None:
        self.table, self.worker, self.limit = table, worker, max(0, int(limit_bps or 0))
        self.started = self.last_report = time.monotonic()
        self.nbytes = 0

    def add(self, nbytes: int) -> None:
        self.nbytes += nbytes
        if self.limit:
            ahead = self.nbytes / self.limit - (time.monotonic() - self.started)
            if ahead > 0:
                time.sleep(ahead)
        if self.worker and time.monotonic() - self.last_report >= self.REPORT_EVERY_S:
            self.finish()

    def finish(self) -> None:
        self.last_report = time.monotonic()
        elapsed = self.last_report - self.started
        if self.worker and self.nbytes and elapsed > 0:
            report_throughput(self.table, self.worker, self.nbytes / elapsed)
