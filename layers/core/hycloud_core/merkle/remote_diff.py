"""Two trees compared level by level when neither is local: both sides answer rounds of the
exchange (`{path: [summary dict, ...]}`, store/merkle_records.py's `answer` or the
`POST /v1/merkle/children` route).

The standby's replication compares the primary's tree with the standby's this way, and a client
switching back compares the standby's with the primary's. Equal hashes prune whole subtrees, so
an unchanged namespace costs one round and a change at depth d costs d rounds.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from itertools import batched
from typing import Any, TypeGuard

from .exchange import VIRTUAL_ROOT

Ask = Callable[[list[str]], dict[str, list[dict[str, Any]]]]
ROUND = 1000  # paths per request (the route's limit)


@dataclass(frozen=True)
class Difference:
    """The topmost node at `path` that differs: its summary on each side (None when absent)."""

    path: str
    source: dict[str, Any] | None
    target: dict[str, Any] | None

    @property
    def source_live(self) -> bool:
        return live(self.source)

    @property
    def target_live(self) -> bool:
        return live(self.target)


def live(summary: dict[str, Any] | None) -> TypeGuard[dict[str, Any]]:
    return summary is not None and summary["kind"] != "tombstone"


def _same(a: dict[str, Any] | None, b: dict[str, Any] | None) -> bool:
    if not live(a) or not live(b):
        return not live(a) and not live(b)
    assert a is not None and b is not None  # both live
    return bool(a["kind"] == b["kind"] and a["hash"] == b["hash"])


def _both_dirs(a: dict[str, Any] | None, b: dict[str, Any] | None) -> bool:
    return a is not None and b is not None and live(a) and live(b) and a["kind"] == b["kind"] == "dir"


def _round(ask: Ask, paths: list[str]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for chunk in batched(paths, ROUND):
        out.update(ask(list(chunk)))
    return out


def differences(source: Ask, target: Ask) -> list[Difference]:
    """The topmost differing nodes: a folder missing on one side is one difference, not one per file."""
    pending, found = [VIRTUAL_ROOT], []
    while pending:
        left, right = _round(source, pending), _round(target, pending)
        deeper = []
        for parent in pending:
            a = {s["path"]: s for s in left.get(parent, [])}
            b = {s["path"]: s for s in right.get(parent, [])}
            for path in sorted(a.keys() | b.keys()):
                s, t = a.get(path), b.get(path)
                if _same(s, t):
                    continue
                if _both_dirs(s, t):
                    deeper.append(path)
                else:
                    found.append(Difference(path, s, t))
        pending = deeper
    return found
