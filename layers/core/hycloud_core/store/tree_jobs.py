"""The record of a tree job (a copy, move or removal of a large tree run by Step Functions).

Record `TREEJOB#<user>` / `<job id>`. The id is derived from the operation and its paths, so
submitting the same operation again finds the record: it follows the job while it runs and
resumes it from its cursor after it failed or stopped. Each run of a job has its own token and
each attempt its own execution name (a closed execution's name cannot be reused). A step saves
progress only while the record still names its execution, so a step of a stopped execution
that is still running cannot overwrite the progress of the attempt that replaced it.
"""

from __future__ import annotations

import hashlib
import re
import time
import uuid
from dataclasses import asdict, dataclass, field
from decimal import Decimal
from typing import Any

from ..errors import BadRequestError

RUNNING, SUCCEEDED, FAILED, STOPPED = "running", "succeeded", "failed", "stopped"
COUNT, APPLY, RENAME, RECORDS, FINISH = "count", "apply", "rename", "records", "finish"
EMPTY = "empty"  # the op of a user's trash-emptying job (fs/trash.py `drain`): src "/", no leases
RESTORE = (
    "restore"  # a snapshot's restore (fs/snapshots.py): src within the snapshot `snapshot`, dst its place
)
SNAPSHOT = "snapshot"  # making a snapshot (fs/snapshots.py): src its folder, dst its name; its lease apart
RESUMABLE_S = 86400  # a failed or stopped job resumes when resubmitted within a day
ID_PATTERN = r"^tree-[0-9a-f]{32}$"
_ID = re.compile(ID_PATTERN)


def job_id(op: str, src: str, dst: str | None) -> str:
    return "tree-" + hashlib.sha256("\0".join([op, src, dst or ""]).encode()).hexdigest()[:32]


def checked_id(value: str) -> str:
    if not _ID.match(value):
        raise BadRequestError("job id is malformed", code="bad-job")
    return value


class Superseded(Exception):
    """The record names another execution now: this step's attempt was stopped and replaced."""


@dataclass
class TreeJob:
    user: str
    id: str
    op: str  # copy | move | remove | empty | snapshot | restore
    src: str
    dst: str | None
    leases: list[str]
    owner: str = field(default_factory=lambda: f"job-{uuid.uuid4().hex}")
    run: str = field(default_factory=lambda: uuid.uuid4().hex[:8])
    state: str = RUNNING
    phase: str = COUNT
    cursor: str | None = None  # walk cursor of the current phase
    counted: int = 0  # files counted so far
    files: int | None = None  # total files, once counted
    done: int = 0  # files copied, moved or removed
    attempt: int = 1
    execution: str = ""
    created: int = field(default_factory=lambda: int(time.time()))
    updated: int = field(default_factory=lambda: int(time.time()))
    error: dict[str, Any] | None = None
    snapshot: str | None = None  # a restore's snapshot (its name)

    def __post_init__(self) -> None:
        self.execution = self.execution or self.execution_name()

    def execution_name(self) -> str:
        return f"{self.id}-{self.run}-{self.attempt}"

    @property
    def resumable(self) -> bool:
        return self.state in (FAILED, STOPPED) and time.time() - self.updated < RESUMABLE_S

    def status(self) -> dict[str, Any]:
        """What the API tells the client: never more than codes, counts and messages."""
        out = {
            "job": self.id,
            "op": self.op,
            "src": self.src,
            "dst": self.dst,
            "state": self.state,
            "done": self.done,
            "total": self.files,
            "attempt": self.attempt,
        }
        return {**out, **({"error": self.error} if self.error else {})}


def _plain(value: Any) -> Any:
    """DynamoDB's Decimals back to ints, inside lists and maps too."""
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return int(value) if isinstance(value, Decimal) else value


class TreeJobs:
    def __init__(self, table: Any) -> None:
        self.table = table
        self._failed = table.meta.client.exceptions.ConditionalCheckFailedException

    @staticmethod
    def _key(user: str, id: str) -> dict[str, Any]:
        return {"pk": f"TREEJOB#{user}", "sk": id}

    def get(self, user: str, id: str) -> TreeJob | None:
        item = self.table.get_item(Key=self._key(user, id), ConsistentRead=True).get("Item")
        if not item:
            return None
        fields = {k: _plain(v) for k, v in item.items() if k not in ("pk", "sk")}
        return TreeJob(id=id, **fields)

    def _put(self, job: TreeJob, condition: str, values: dict[str, Any]) -> bool:
        """Write the whole record if `condition` holds (#s: state, #a: attempt, #e: execution)."""
        job.updated = int(time.time())
        item = {**self._key(job.user, job.id), **{k: v for k, v in asdict(job).items() if k != "id"}}
        names = {
            n: a for n, a in {"#s": "state", "#a": "attempt", "#e": "execution"}.items() if n in condition
        }
        try:
            self.table.put_item(
                Item=item,
                ConditionExpression=condition,
                ExpressionAttributeValues=values,
                **({"ExpressionAttributeNames": names} if names else {}),
            )
            return True
        except self._failed:
            return False

    def create(self, job: TreeJob) -> bool:
        """Record a new job unless a job of the same operation is running."""
        return self._put(job, "attribute_not_exists(pk) OR #s <> :running", {":running": RUNNING})

    def claim(self, job: TreeJob, state: str, attempt: int) -> bool:
        """Save `job` (a new attempt) if the record is still in `state` at `attempt`."""
        return self._put(job, "#s = :s AND #a = :a", {":s": state, ":a": attempt})

    def save(self, job: TreeJob) -> None:
        """Save a step's progress; Superseded if the job is no longer running as this execution."""
        if not self._put(job, "#e = :e AND #s = :running", {":e": job.execution, ":running": RUNNING}):
            raise Superseded(job.execution)

    def forget(self, job: TreeJob) -> None:
        """Remove the record of a job that never started (its operation was refused)."""
        try:
            self.table.delete_item(
                Key=self._key(job.user, job.id),
                ConditionExpression="#o = :o AND #e = :e",
                ExpressionAttributeNames={"#o": "owner", "#e": "execution"},
                ExpressionAttributeValues={":o": job.owner, ":e": job.execution},
            )
        except self._failed:
            pass  # another request has taken the job over
