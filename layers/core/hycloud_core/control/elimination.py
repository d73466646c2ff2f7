"""Local redundant request elimination (seed 000 §III-C, client side).

While requests wait in the client's local queue, some become pointless before they are sent:

* an upload followed by another upload or a delete of the same path: the first upload is
  dropped (a later upload inherits whether the path is new at the cloud);
* an upload that creates a path followed by its delete: both cancel, as do ``mkdir`` followed
  by ``rmdir`` of the same directory.

A pair is only merged when no operation on a related path (the path, an ancestor, a
descendant, either end of a move or copy) came in between, so everything that is kept still
runs in request order and every effect that would be visible at the end survives.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from hycloud_core.control.fop import OpKind, normalise, paths_related


@dataclass(frozen=True)
class LocalOp:
    op_id: str
    kind: OpKind
    path: str
    dest: str | None = None
    creates: bool = False  # an upload of a path the cloud does not have yet
    data: Mapping[str, Any] = field(default_factory=dict)  # JSON-able details for the request

    def paths(self) -> tuple[str, ...]:
        main = normalise(self.path)
        return (main, normalise(self.dest)) if self.dest else (main,)

    def to_dict(self) -> dict[str, Any]:
        item: dict[str, Any] = {
            "op_id": self.op_id,
            "kind": self.kind.value,
            "path": self.path,
            "creates": self.creates,
        }
        if self.dest is not None:
            item["dest"] = self.dest
        if self.data:
            item["data"] = dict(self.data)
        return item

    @classmethod
    def from_dict(cls, item: Mapping[str, Any]) -> LocalOp:
        return cls(
            op_id=item["op_id"],
            kind=OpKind(item["kind"]),
            path=item["path"],
            dest=item.get("dest"),
            creates=bool(item.get("creates", False)),
            data=dict(item.get("data", {})),
        )


def touches(a: LocalOp, b: LocalOp) -> bool:
    """Same path, or one is an ancestor of the other, for any pair of their paths."""
    return paths_related(a.paths(), b.paths())


class Eliminator:
    """Pending operations in request order, merged as they arrive."""

    def __init__(self, pending: list[LocalOp] | None = None) -> None:
        self.pending: list[LocalOp] = list(pending or [])

    def push(self, op: LocalOp) -> list[str]:
        """Queue ``op``; returns the ids dropped (possibly including ``op`` itself)."""
        index = self._last_related(op)
        last = self.pending[index] if index is not None else None
        if index is not None and last is not None and _same_target(last, op):
            if last.kind is OpKind.UPLOAD and op.kind in (OpKind.UPLOAD, OpKind.DELETE):
                del self.pending[index]
                if op.kind is OpKind.DELETE and last.creates:
                    return [last.op_id, op.op_id]
                if op.kind is OpKind.UPLOAD:
                    op = replace(op, creates=last.creates)
                self.pending.append(op)
                return [last.op_id]
            if last.kind is OpKind.MKDIR and op.kind is OpKind.RMDIR:
                del self.pending[index]
                return [last.op_id, op.op_id]
        self.pending.append(op)
        return []

    def _last_related(self, op: LocalOp) -> int | None:
        for index in range(len(self.pending) - 1, -1, -1):
            if touches(self.pending[index], op):
                return index
        return None


def _same_target(a: LocalOp, b: LocalOp) -> bool:
    return a.dest is None and b.dest is None and normalise(a.path) == normalise(b.path)
