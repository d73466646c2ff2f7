"""What each kind of job is told: one frozen dataclass per kind, built by the controller, sent as
the job's JSON input (a Step Functions execution's, or a direct Lambda invocation's payload) and
parsed back by the function that runs it.

The wire format is the one the state machines read (statemachines/*.asl.json: `$.base_hash`,
`$.base_cached`, `$.ranges`, ...), so `to_event` writes the same keys the controller always
sent: a field that is None, False or empty is left out (the workflows test keys for presence),
a `Source`'s fields sit in the job's own object, `base_source` is an object of its own. Both ends
validate: a spec is checked when it is made (`__post_init__`), so the controller cannot send a
malformed one, and `from_event` raises `SpecError` naming the key when a function is handed one.
Keys a spec does not name (what a workflow adds on the way, such as its fetch reports) are left
alone, except `fetched`, which the delta task reads.
"""

from __future__ import annotations

import types
from dataclasses import MISSING, dataclass, field, fields, replace
from typing import Any, ClassVar, Self, Union, get_args, get_origin, get_type_hints

from ..errors import BadRequestError
from .names import checked_bundle_job

FLAT = {"flat": True}  # metadata of a field whose keys sit in the job's own object


class SpecError(BadRequestError):
    """A job's input is not a spec of its kind: a key is missing or of the wrong type."""

    def __init__(self, message: str) -> None:
        super().__init__(message, code="bad-job-spec")


_HINTS: dict[str, dict[str, Any]] = {}


def _hints(cls: type) -> dict[str, Any]:
    """A spec's field types, resolved once per class (the annotations are strings)."""
    name = f"{cls.__module__}.{cls.__qualname__}"
    if name not in _HINTS:
        _HINTS[name] = get_type_hints(cls)
    return _HINTS[name]


def _is_a(value: object, hint: Any) -> bool:
    """Whether `value` has the type `hint` names (the few kinds specs use)."""
    origin = get_origin(hint)
    if hint is Any:
        return True
    if origin in (Union, types.UnionType):
        return any(_is_a(value, arg) for arg in get_args(hint))
    if hint is type(None):
        return value is None
    if origin is tuple:
        item = get_args(hint)[0]
        return isinstance(value, tuple) and all(_is_a(v, item) for v in value)
    if origin is dict:
        return isinstance(value, dict) and all(isinstance(k, str) for k in value)
    if hint in (int, float):  # an int is a float on the wire; a bool is neither
        return isinstance(value, int if hint is int else (int, float)) and not isinstance(value, bool)
    return isinstance(value, hint)


def _is_spec(hint: Any) -> bool:
    return isinstance(hint, type) and issubclass(hint, Spec)


def _parsed(value: object, hint: Any) -> Any:
    """A JSON value as the type `hint` names: objects as dataclasses, arrays as tuples."""
    if get_origin(hint) in (Union, types.UnionType):
        for arg in get_args(hint):
            if arg is not type(None) and (_is_spec(arg) or get_origin(arg) is tuple):
                return _parsed(value, arg) if value is not None else None
        return value
    if _is_spec(hint) and isinstance(value, dict):
        return hint.from_event(value)
    if get_origin(hint) is tuple and isinstance(value, list):
        return tuple(_parsed(v, get_args(hint)[0]) for v in value)
    return value


def _wire(value: object) -> Any:
    if isinstance(value, Spec):
        return value.to_event()
    if isinstance(value, tuple):
        return [_wire(v) for v in value]
    return value


def _absent(value: object) -> bool:
    """Left out of the event: the workflows and functions test these keys for presence."""
    return value is None or value is False or value == ()


@dataclass(frozen=True, kw_only=True)
class Spec:
    """A job's input, or a part of it, with its wire form and its checks."""

    def __post_init__(self) -> None:
        hints = _hints(type(self))
        for f in fields(self):
            value = getattr(self, f.name)
            if not _is_a(value, hints[f.name]):
                raise SpecError(
                    f"{type(self).__name__}: '{f.name}' must be {hints[f.name]}, not {value!r:.80}"
                )
        self.check()

    def check(self) -> None:
        """What a kind requires beyond its fields' types."""

    def to_event(self) -> dict[str, Any]:
        event: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if f.metadata.get("flat"):
                event.update(value.to_event())
            elif not _absent(value):
                event[f.name] = _wire(value)
        return event

    @classmethod
    def from_event(cls, event: object) -> Self:
        """The spec an event carries; SpecError when it does not carry one."""
        if not isinstance(event, dict):
            raise SpecError(f"{cls.__name__}: the event must be a JSON object")
        hints, values = _hints(cls), {}
        for f in fields(cls):
            if f.metadata.get("flat"):
                values[f.name] = hints[f.name].from_event(event)
            elif f.name in event and event[f.name] is not None:
                values[f.name] = _parsed(event[f.name], hints[f.name])
            elif f.default is MISSING and f.default_factory is MISSING:
                raise SpecError(f"{cls.__name__}: the event lacks '{f.name}'")
        return cls(**values)


@dataclass(frozen=True, kw_only=True)
class JobSpec(Spec):
    """A whole job's input: the controller leaves out `job`, the name of the attempt that runs
    it, which is added when the attempt is launched (`named`)."""

    job: str | None = None

    def named(self, job: str) -> Self:
        return replace(self, job=job)

    @property
    def job_name(self) -> str:
        """The attempt's name, which its staging files are named by; a function is always told it."""
        if not self.job:
            raise SpecError(f"{type(self).__name__}: the event lacks 'job'")
        return self.job


@dataclass(frozen=True, kw_only=True)
class BucketAt(Spec):
    """An instance's bucket, where a coded file's blocks may be."""

    region: str
    bucket: str


@dataclass(frozen=True, kw_only=True)
class TableAt(Spec):
    """The home table, which a job at a data instance meters its run in (it has none of its own)."""

    name: str
    region: str


@dataclass(frozen=True, kw_only=True)
class Source(Spec):
    """Where a job reads a version from when not its own bucket's object: a coded file's layout
    (`erasure_ref` in the home relay cache, `erasure_key` in a data instance's bucket) and every
    instance's bucket, or another region's bucket; at a data instance, the home table."""

    erasure_ref: str | None = None
    erasure_key: str | None = None
    instances: tuple[BucketAt, ...] = ()
    bucket: str | None = None
    bucket_region: str | None = None
    table: TableAt | None = None

    @property
    def coded(self) -> bool:
        return bool(self.erasure_ref or self.erasure_key)

    def check(self) -> None:
        if self.coded and not self.instances:
            raise SpecError("Source: a coded file's layout comes with its 'instances'")


def _plain_name(kind: str, key: str, name: str | None) -> None:
    if name is not None and (not name or "/" in name or name in (".", "..")):
        raise SpecError(f"{kind}: '{key}' must be a plain file name")


def _paired(kind: str, spec: Spec, a: str, b: str) -> None:
    if (getattr(spec, a) is None) != (getattr(spec, b) is None):
        raise SpecError(f"{kind}: '{a}' and '{b}' come together")


@dataclass(frozen=True, kw_only=True)
class ByteRange(Spec):
    """One piece of a relay too large for one function (hycloud_core.relay.byte_ranges)."""

    index: int
    offset: int
    length: int


@dataclass(frozen=True, kw_only=True)
class RelaySpec(JobSpec):
    """A relay job: the object of `content_hash` (or `key`) copied into the relay cache as
    `cache_name`, whole or by `ranges`, or a coded file rebuilt from its blocks (`source`); at a
    data instance also put in its bucket as `publish_key`. The delta workflow's base fetch is one
    too (no `job`: part of the delta job's)."""

    cache_name: str
    content_hash: str | None = None
    key: str | None = None
    size: int | None = None
    source: Source = field(default_factory=Source, metadata=FLAT)
    ranges: tuple[ByteRange, ...] = ()
    range_options: dict[str, Any] | None = None
    publish_key: str | None = None
    worker: str | None = None  # the queue's worker that runs it, and its throttle (dispatch)
    throttle_bps: float | None = None

    def check(self) -> None:
        _plain_name("RelaySpec", "cache_name", self.cache_name)
        if not self.key and not self.content_hash:
            raise SpecError("RelaySpec: the event needs 'key' or 'content_hash'")


class _Acted(Spec):
    """A spec the delta function tells from the others by its `action`."""

    ACTION: ClassVar[str]

    def to_event(self) -> dict[str, Any]:
        return {"action": self.ACTION, **super().to_event()}

    @classmethod
    def from_event(cls, event: object) -> Self:
        if isinstance(event, dict) and event.get("action") != cls.ACTION:
            raise SpecError(f"{cls.__name__}: 'action' must be {cls.ACTION!r}")
        return super().from_event(event)


@dataclass(frozen=True, kw_only=True)
class DeltaSpec(_Acted, JobSpec):
    """What both delta jobs share: the new version (`content_hash`, cached as `cache_name`), the
    base (`base_hash`, cached as `base_cache_name`; `base_cached` when it is there already, else
    fetched as `base_source` says) and what the client staged in S3."""

    ACTION: ClassVar[str]

    cache_name: str
    content_hash: str
    base_hash: str | None = None
    base_cache_name: str | None = None
    base_cached: bool = False
    base_source: Source | None = None
    staged_key: str | None = None
    staged_sha256: str | None = None
    fetched: Any = None  # the workflow's base fetch report (hit, size, seconds)

    def check(self) -> None:
        kind = type(self).__name__
        _plain_name(kind, "cache_name", self.cache_name)
        _plain_name(kind, "base_cache_name", self.base_cache_name)
        _paired(kind, self, "base_hash", "base_cache_name")
        _paired(kind, self, "staged_key", "staged_sha256")


@dataclass(frozen=True, kw_only=True)
class DeltaDownloadSpec(DeltaSpec):
    """A delta download: version-aware from `base_hash` at zstd `level`, or rsync-style against
    the client's checksum list (staged, or in home staging); `source` says how a coded new
    version is rebuilt, `publish_delta` that the delta goes to the bucket (a data instance's),
    `new_url` where a direct job reads the new version."""

    ACTION: ClassVar[str] = "encode"

    level: int | None = None
    source: Source = field(default_factory=Source, metadata=FLAT)
    publish_delta: bool = False
    new_url: str | None = None


@dataclass(frozen=True, kw_only=True)
class DeltaUploadSpec(DeltaSpec):
    """A delta upload: the client's delta patched onto the base (the path's current version),
    checked against `content_hash` and linked at `path` only if the path still holds the base."""

    ACTION: ClassVar[str] = "apply"

    user: str
    path: str

    def check(self) -> None:
        super().check()
        if self.base_hash is None:
            raise SpecError("DeltaUploadSpec: the event lacks 'base_hash'")


@dataclass(frozen=True, kw_only=True)
class SettleSpec(_Acted):
    """A delta upload's version, acknowledged once verified and on EFS, put in S3: the relay
    cache's `cache_name` holds it (kept there until settled); `user`'s `path` was linked to it."""

    ACTION: ClassVar[str] = "settle"

    cache_name: str
    content_hash: str
    user: str
    path: str

    def check(self) -> None:
        _plain_name("SettleSpec", "cache_name", self.cache_name)


@dataclass(frozen=True, kw_only=True)
class TreeJobSpec(Spec):
    """A tree job (a large move or copy): its record, by owner and id, says the rest."""

    user: str
    id: str

    def check(self) -> None:
        if not self.user or not self.id:
            raise SpecError(f"{type(self).__name__}: 'user' and 'id' name the job")


@dataclass(frozen=True, kw_only=True)
class TreeStepSpec(TreeJobSpec):
    """One step of a tree job as its workflow (statemachines/tree_job.asl.json) invokes the tree
    function: the job and the `execution` running it; `action` "fail" (the workflow's Catch)
    records the failure, whose `error` names what the step raised."""

    FAIL: ClassVar[str] = "fail"

    execution: str
    action: str | None = None
    error: Any = None

    def check(self) -> None:
        super().check()
        if self.action not in (None, self.FAIL):
            raise SpecError(f"TreeStepSpec: 'action' must be {self.FAIL!r} when given")

    @property
    def failed(self) -> bool:
        return self.action == self.FAIL


@dataclass(frozen=True, kw_only=True)
class BundleJobSpec(Spec):
    """A bundle job: commit the bundle `user` staged in S3 as `staged` (its sha256) under `root`,
    making missing folders when `parents`; `job` names its outcome file in staging."""

    job: str
    user: str
    staged: str
    root: str
    parents: bool = False

    def check(self) -> None:
        checked_bundle_job(self.job)
        if not self.user:
            raise SpecError("BundleJobSpec: the event lacks 'user'")


@dataclass(frozen=True, kw_only=True)
class RepairStep(Spec):
    """A repair of the coded blocks on `region`'s instance from the others' (one user's files, or
    everyone's without `user`), done up to `cursor` of the coded links with the counts so far:
    the repair workflow (statemachines/coded_repair.asl.json) hands each step's answer to the next."""

    region: str
    user: str | None = None
    cursor: int = 0
    files: int = 0
    checked: int = 0
    rebuilt: int = 0
    unrecoverable: int = 0


@dataclass(frozen=True, kw_only=True)
class MigrateStep(Spec):
    """A move of the coded blocks to a changed ring of data `instances` (the shape of
    `HYCLOUD_INSTANCES`). The first step checks and records the ring, setting `started` and the
    instances it replaces (`previous`, whose old copies go too); "move" steps walk the coded
    links from `cursor`, the "clean" step deletes the moved blocks' old copies."""

    ACTION: ClassVar[str] = "migrate"
    PHASES: ClassVar[tuple[str, ...]] = ("move", "clean")

    action: str = ACTION
    instances: tuple[dict[str, Any], ...]
    started: float | None = None
    phase: str = "move"
    previous: tuple[dict[str, Any], ...] = ()
    cursor: int = 0
    files: int = 0
    moved: int = 0
    kept: int = 0
    unmovable: int = 0

    def check(self) -> None:
        if self.phase not in self.PHASES:
            raise SpecError(f"MigrateStep: 'phase' must be one of {self.PHASES}")


@dataclass(frozen=True, kw_only=True)
class SweepSpec(Spec):
    """Reclaim the blocks no link file names and older than `grace_s` (the deployment's grace
    period when absent), in every instance's bucket."""

    ACTION: ClassVar[str] = "sweep"

    action: str = ACTION
    grace_s: float | None = None


def coded_block_spec(event: object) -> RepairStep | MigrateStep | SweepSpec:
    """The job over coded blocks an event carries, by its `action` (a repair without one)."""
    action = event.get("action") if isinstance(event, dict) else None
    if action is None:
        return RepairStep.from_event(event)
    if action == MigrateStep.ACTION:
        return MigrateStep.from_event(event)
    if action == SweepSpec.ACTION:
        return SweepSpec.from_event(event)
    raise SpecError(f"unknown coded-block action {action!r}")


def delta_spec(event: object) -> DeltaDownloadSpec | DeltaUploadSpec | SettleSpec:
    """The delta job an event carries, by its `action`."""
    action = event.get("action") if isinstance(event, dict) else None
    if action == SettleSpec.ACTION:
        return SettleSpec.from_event(event)
    if action == DeltaUploadSpec.ACTION:
        return DeltaUploadSpec.from_event(event)
    if action == DeltaDownloadSpec.ACTION:
        return DeltaDownloadSpec.from_event(event)
    raise SpecError(f"unknown delta action {action!r}")
