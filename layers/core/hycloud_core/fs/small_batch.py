"""Committing many small files at once (a bundle's), each with the guarantees of `put_small`.

Committed one by one, every file costs its own lease transaction, lease query and release,
quota read and update, file record, Merkle node and one update per folder above it: about
ten DynamoDB round trips, which were nearly all of a bundle's time. Here a bundle pays them
once: its leases in a few transactions (store/locks.py `acquire_all`), one quota reservation
for the growth of all its files, records and Merkle nodes in batch writes, and each folder
above its files invalidated once. The files themselves are written to EFS side by side.

Every file still succeeds or fails on its own: a busy path, a path not at the version the file
names (`expect`, checked under its lease), a folder in the way or a failed write is that file's
error, and the quota it had reserved is given back. Files whose paths nest (`/y/f` and `/y/f/c`)
are written one after the other in bundle order, so the second meets the first as a 409, never
a race on the disk. When the bundle as a
whole does not fit the quota, its files are counted one at a time, in order, so those that fit
commit and the rest are refused as a single write would be.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from functools import partial

from .. import content, paths
from ..errors import BadRequestError, ConflictError, HyCloudError, NotFoundError
from ..observability import logger
from ..store.locks import WAIT_S
from ..store.quotas import Change, QuotaExceeded
from ..store.version_records import VersionRecord
from .namespace import Entry, file_mode
from .operations import FileSystem, in_parallel

Result = Entry | HyCloudError


@dataclass(frozen=True)
class SmallWrite:
    """One file of a batch; `path` canonical, `sha256` checked against `data` by the caller."""

    path: str
    data: bytes
    sha256: str
    mtime: float | None = None
    mode: int | None = None
    expect: str | None = None  # the version the path must hold (operations.ABSENT: none)


@dataclass
class _Old:
    """What a write replaces: its quota share and the version kept of it (fs/history.py)."""

    change: Change
    kept: VersionRecord | None = None


def put_small_batch(fs: FileSystem, writes: list[SmallWrite], parents: bool = False) -> list[Result]:
    """Write each file (paths distinct); per file, its entry or the error a single PUT would give."""
    results: list[Result | None] = [None] * len(writes)
    lease = fs.lease()
    try:
        busy = lease.acquire_all([w.path for w in writes], WAIT_S)
        todo = [i for i, w in enumerate(writes) if w.path not in busy]
        for i, w in enumerate(writes):
            if w.path in busy:
                results[i] = busy[w.path]
        todo = _at_expected_versions(fs, writes, todo, results)
        olds = dict(zip(todo, in_parallel(lambda i: _old(fs, writes[i]), todo), strict=True))
        changes = {i: Change(len(writes[i].data), 1) - olds[i].change for i in todo}
        _write_counted(fs, writes, todo, changes, olds, results, parents)
        _index(fs, writes, todo, results, olds)
    finally:
        lease.release()
    return [r if r is not None else HyCloudError("internal error") for r in results]


def _write_counted(
    fs: FileSystem,
    writes: list[SmallWrite],
    todo: list[int],
    changes: dict[int, Change],
    olds: dict[int, _Old],
    results: list[Result | None],
    parents: bool,
) -> None:
    """Write the files under one quota reservation, or one each when the whole does not fit."""

    def write(i: int) -> Result:
        return _write(fs, writes[i], parents)

    total = sum(changes.values(), Change())
    try:
        with _counting(fs, total):
            for i, result in zip(todo, _in_path_order(write, writes, todo), strict=True):
                results[i] = result
    except QuotaExceeded:
        for i in todo:
            results[i] = _write_alone(fs, changes[i], partial(write, i))
        return
    failed = sum((changes[i] for i in todo if isinstance(results[i], HyCloudError)), Change())
    fs.quota.give_back(failed)


def _at_expected_versions(
    fs: FileSystem, writes: list[SmallWrite], todo: list[int], results: list[Result | None]
) -> list[int]:
    """The writes whose path holds the version they expect; the others get their 409."""

    def mismatch(i: int) -> ConflictError | None:
        try:
            fs.check_expected(writes[i].path, writes[i].expect)
        except ConflictError as err:
            return err
        return None

    named = [i for i in todo if writes[i].expect is not None]
    for i, err in zip(named, in_parallel(mismatch, named), strict=True):
        results[i] = err
    return [i for i in todo if results[i] is None]


def _in_path_order(write: Callable[[int], Result], writes: list[SmallWrite], todo: list[int]) -> list[Result]:
    """Each write's result: side by side, except those whose paths nest, one by one in order."""
    nested = _nested(writes, todo)
    apart = [i for i in todo if i not in nested]
    done = dict(zip(apart, in_parallel(write, apart), strict=True))
    done.update({i: write(i) for i in todo if i in nested})
    return [done[i] for i in todo]


def _nested(writes: list[SmallWrite], todo: list[int]) -> set[int]:
    """The writes whose path lies above or below another write's path."""
    index = {writes[i].path: i for i in todo}
    nested: set[int] = set()
    for i in todo:
        folder = paths.parent(writes[i].path)
        while folder != "/":
            if folder in index:
                nested.update((i, index[folder]))
            folder = paths.parent(folder)
    return nested


def _counting(fs: FileSystem, change: Change) -> AbstractContextManager[None]:
    return nullcontext() if fs.quota.records is None else fs.quota.change(change)


def _write_alone(fs: FileSystem, change: Change, write: Callable[[], Result]) -> Result:
    """One file under its own quota reservation (given back if the write failed)."""
    try:
        with _counting(fs, change):
            result = write()
    except QuotaExceeded as err:
        return err
    if isinstance(result, HyCloudError):
        fs.quota.give_back(change)
    return result


def _old(fs: FileSystem, w: SmallWrite) -> _Old:
    try:
        entry = fs.ns.stat(w.path)
    except (NotFoundError, BadRequestError):
        return _Old(Change())
    if entry.type != "file":
        return _Old(Change())
    kept = fs.history.preserve(w.path, "overwrite", content.hash_bytes(w.data))
    return _Old(Change(entry.size, 1), kept)


def _write(fs: FileSystem, w: SmallWrite, parents: bool) -> Result:
    bits = 0o640 if w.mode is None else file_mode(w.mode)
    try:
        return fs.ns.write(w.path, w.data, parents=parents, mode=bits, mtime=w.mtime)
    except HyCloudError as err:
        return err
    except Exception:  # noqa: BLE001 - one file's fault must not sink the others
        logger.exception("batched small-file write failed")
        return HyCloudError("internal error")


def _index(
    fs: FileSystem,
    writes: list[SmallWrite],
    todo: list[int],
    results: list[Result | None],
    olds: dict[int, _Old],
) -> None:
    """The written files' records and Merkle nodes, in batches; the versions they replaced recorded."""
    done = [i for i in todo if isinstance(results[i], Entry)]
    fs.records.put_files(
        fs.user,
        {
            writes[i].path: {"kind": "small", "size": len(writes[i].data), "sha256": writes[i].sha256}
            for i in done
        },
    )
    fs.merkle.files_written(
        [(writes[i].path, content.hash_bytes(writes[i].data), results[i].mtime) for i in done]  # type: ignore[union-attr]
    )
    history = fs.history
    in_parallel(history.record, [kept for i in done if (kept := olds[i].kept) is not None])
