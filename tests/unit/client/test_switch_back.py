"""Switch-back's rules per difference: the standby's newer state reaches the primary, the
primary's newer state (including a later deletion) stays."""

from __future__ import annotations

from pathlib import Path

from hycloud.sdk.switch_back import _settle
from hycloud_core.merkle.remote_diff import Difference


class Side:
    def __init__(self) -> None:
        self.calls: list[tuple] = []

    def get(self, path: str, local: Path) -> None:
        local.write_bytes(b"standby")
        self.calls.append(("get", path))

    def put(self, local: Path, path: str, parents: bool = False) -> None:
        self.calls.append(("put", path, local.read_bytes()))

    def rm(self, path: str) -> None:
        self.calls.append(("rm", path))


def node(kind: str, mtime: float) -> dict:
    return {"path": "/a.txt", "kind": kind, "hash": "" if kind == "tombstone" else "ab", "mtime": mtime}


def settle(source: dict | None, target: dict | None, tmp_path: Path) -> list[tuple]:
    src, dst = Side(), Side()
    _settle(Difference("/a.txt", source, target), src, dst, tmp_path)
    return dst.calls


def test_the_standby_newer_file_is_copied(tmp_path):
    assert settle(node("file", 20), node("file", 10), tmp_path) == [("put", "/a.txt", b"standby")]
    assert settle(node("file", 20), None, tmp_path) == [("put", "/a.txt", b"standby")]


def test_the_primary_newer_file_or_later_deletion_stays(tmp_path):
    assert settle(node("file", 10), node("file", 20), tmp_path) == []
    assert settle(node("file", 10), node("tombstone", 20), tmp_path) == []


def test_a_later_deletion_on_the_standby_removes_the_primary_copy(tmp_path):
    assert settle(node("tombstone", 20), node("file", 10), tmp_path) == [("rm", "/a.txt")]
    assert settle(node("tombstone", 10), node("file", 20), tmp_path) == []
    assert settle(None, node("file", 10), tmp_path) == []  # never seen by the standby: kept
