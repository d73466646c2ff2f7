"""A paged walk over a directory tree in a fixed order, resumable from a cursor (tree jobs).

Names are sorted as `Namespace.names` sorts them. "pre" order yields a folder before what it
holds (a copy must make the folder first), "post" order after it (a removal must empty it
first). A cursor is the path, relative to the walk's root, of the last entry processed, with
"" for the root itself. Resuming compares paths component by component, so the walk yields
exactly the entries after the cursor, also when entries before it are gone meanwhile (a removal
deletes what it walked) or the cursor's own entry is.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from dataclasses import dataclass

from .namespace import TMP_PREFIX, Namespace

PRE, POST = "pre", "post"


@dataclass(frozen=True)
class Step:
    rel: str  # path relative to the walk's root; "" is the root
    is_dir: bool


def under(root: str, rel: str) -> str:
    """The path of a walked entry: `root` itself for "", else `root/rel`."""
    return f"{root.rstrip('/')}/{rel}" if rel else root


def _parts(cursor: str | None) -> list[str] | None:
    return None if cursor is None else [p for p in cursor.split("/") if p]


def _children(host: str) -> list[tuple[str, bool]]:
    """Sorted (name, is a folder) of a folder's entries, without temporary files and symlinks."""
    try:
        with os.scandir(host) as it:
            found = [
                (e.name, e.is_dir(follow_symlinks=False))
                for e in it
                if not e.name.startswith(TMP_PREFIX) and not e.is_symlink()
            ]
    except (FileNotFoundError, NotADirectoryError):
        return []
    return sorted(found)


def _join(rel: str, name: str) -> str:
    return f"{rel}/{name}" if rel else name


def _below(host: str, rel: str, order: str, after: list[str] | None) -> Iterator[Step]:
    """Entries strictly below `rel`, after the cursor `after` (relative to `rel`) when given."""
    for name, is_dir in _children(os.path.join(host, rel) if rel else host):
        child = _join(rel, name)
        if after:
            head, rest = after[0], after[1:]
            if name < head:
                continue
            if name == head:
                after = None
                yield from _resumed(host, child, is_dir, order, rest)
                continue
            after = None
        yield from _whole(host, child, is_dir, order)


def _whole(host: str, rel: str, is_dir: bool, order: str) -> Iterator[Step]:
    if order == PRE:
        yield Step(rel, is_dir)
    if is_dir:
        yield from _below(host, rel, order, None)
    if order == POST:
        yield Step(rel, is_dir)


def _resumed(host: str, rel: str, is_dir: bool, order: str, rest: list[str]) -> Iterator[Step]:
    """The rest of an entry the cursor lies in (rest non-empty) or is (rest empty)."""
    if not rest:  # the entry itself was processed: in pre order its contents were not yet
        if order == PRE and is_dir:
            yield from _below(host, rel, order, None)
        return
    if is_dir:
        yield from _below(host, rel, order, rest)
    if order == POST:
        yield Step(rel, is_dir)


def walk(ns: Namespace, path: str, order: str = PRE, after: str | None = None) -> Iterator[Step]:
    """Every entry of the tree at `path` (itself included, as ""), after the cursor `after`."""
    if order not in (PRE, POST):
        raise ValueError(f"order is {PRE!r} or {POST!r}")
    host = ns.host(path)
    is_dir = os.path.isdir(host) and not os.path.islink(host)
    parts = _parts(after)
    if parts is None:
        yield from _whole(host, "", is_dir, order) if is_dir else iter([Step("", False)])
        return
    if parts:  # the cursor is below the root, so the root is a folder
        yield from _below(host, "", order, parts)
        if order == POST:
            yield Step("", True)
    elif order == PRE and is_dir:  # "" : the root itself was processed
        yield from _below(host, "", order, None)


def count(
    ns: Namespace, path: str, after: str | None, deadline: float, limit: int | None = None
) -> tuple[int, int, str | None]:
    """(files, entries, cursor) counted after `after` until done (cursor None), `deadline`
    (time.monotonic()) or `limit` entries; the cursor resumes a count that stopped early."""
    files = entries = 0
    cursor = after
    for step in walk(ns, path, PRE, after):
        files += not step.is_dir
        entries += 1
        cursor = step.rel
        if (limit is not None and entries >= limit) or time.monotonic() >= deadline:
            return files, entries, cursor
    return files, entries, None
