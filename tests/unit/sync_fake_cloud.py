"""An in-memory cloud with the SDK calls sync makes, its Merkle route answered by `Responder`."""

from __future__ import annotations

import os
import time
from pathlib import Path

from hycloud.sdk.client import BELOW
from hycloud.sdk.subscribers import as_progress, report
from hycloud_core import content
from hycloud_core.errors import ConflictError, NotFoundError
from hycloud_core.merkle import DirEntry, FileEntry, Responder, build_tree, sketch
from hycloud_core.merkle.entries import parent_of


class FakeCloud:
    small_file_threshold = 1024

    def __init__(self) -> None:
        self.files: dict[str, tuple[bytes, float]] = {}
        self.dirs: set[str] = {"/"}
        self.calls: list[str] = []
        self.http = type("H", (), {"base": "http://fake"})()
        self.store = type("S", (), {"user": "u1"})()
        self.before_write = None  # another device's write, between the exchange and a push
        self.before_move = None  # another device's write, between the exchange and a move

    def _tree(self):
        entries = {d: DirEntry() for d in self.dirs}
        for p, (data, mtime) in self.files.items():
            entries[p] = FileEntry(bytes.fromhex(content.hash_bytes(data)), mtime)
        return build_tree(entries)

    def merkle_children(self, paths: list[str]) -> dict:
        self.calls.append("merkle")
        return Responder(self._tree()).answer(paths)

    def merkle_diff(self, body: bytes) -> bytes:
        self.calls.append("merkle diff")
        return sketch.answer(body, sketch.NodeReader(self._tree()), subtrees=BELOW)

    def _parents(self, path: str) -> None:
        while (path := parent_of(path)) != "/":
            self.dirs.add(path)

    def _check(self, path: str, expect: str | None) -> None:
        """What the cloud answers a write naming the version it expects (preconditions.py)."""
        if expect is None:
            return
        held = content.hash_bytes(self.files[path][0]) if path in self.files else "absent"
        if held != expect:
            raise ConflictError(f"{path} is not at the expected version", code="version-mismatch")

    def put(self, local, remote, parents=False, progress=None, mtime=None, mode=None, expect=None, **_):
        self.calls.append(f"put {remote}")
        if self.before_write:
            self.before_write(remote)
        self._check(remote, expect)
        data = Path(local).read_bytes()
        self._parents(remote)
        self.files[remote] = (data, mtime if mtime is not None else time.time())
        report(as_progress(progress), "upload", len(data))
        return {"path": remote, "size": len(data)}

    def get(self, remote, local, progress=None, **_):
        self.calls.append(f"get {remote}")
        data, _mtime = self.files[remote]
        Path(local).write_bytes(data)
        report(as_progress(progress), "download", len(data))
        return Path(local)

    def iter_dir(self, path):
        self.calls.append(f"list {path}")
        if path not in self.dirs:
            raise NotFoundError(path)
        for p, (data, mtime) in self.files.items():
            if parent_of(p) == path:
                yield {
                    "name": p.rsplit("/", 1)[1],
                    "path": p,
                    "type": "file",
                    "size": len(data),
                    "mtime": mtime,
                }

    def mkdir(self, path, parents=False, **_):
        self.calls.append(f"mkdir {path}")
        self._parents(path + "/x")
        return {"path": path}

    def mv(self, src, dst, expect=None, **_):
        self.calls.append(f"mv {src} {dst}")
        if self.before_move:
            self.before_move(src, dst)
        self._check(dst, expect)
        self._parents(dst)
        self.files[dst] = self.files.pop(src)

    def rm(self, path, expect=None):
        self.calls.append(f"rm {path}")
        self._check(path, expect)
        del self.files[path]

    def rmdir(self, path, **_):
        self.calls.append(f"rmdir {path}")
        if any(p.startswith(path + "/") for p in [*self.files, *self.dirs]):
            raise ConflictError("not empty")
        self.dirs.discard(path)


def write(path: Path, data: bytes, mtime: float | None = None) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    if mtime is not None:
        os.utime(path, (mtime, mtime))


class FileByFile:
    """`sdk.bundles` for the fake cloud: each file through its put/get."""

    @staticmethod
    def put_files(client, pairs, progress=None, expect=None):
        def one(local, remote):
            try:
                return {
                    **client.put(local, remote, progress=progress, expect=(expect or {}).get(remote)),
                    "status": "ok",
                }
            except ConflictError as err:
                return {"path": remote, "status": "error", "error": str(err), "code": err.code}

        return [one(local, remote) for local, remote in pairs]

    batches: list[int] = []  # files per get_files call

    @staticmethod
    def get_files(client, pairs, progress=None):
        """As the real one: folders made, each file with the cloud's mtime, its hash returned."""
        FileByFile.batches.append(len(pairs))
        out = []
        for remote, local in pairs:
            Path(local).parent.mkdir(parents=True, exist_ok=True)
            client.get(remote, local, progress=progress)
            data, mtime = client.files[remote]
            os.utime(local, (mtime, mtime))
            out.append(
                {
                    "path": remote,
                    "local": str(local),
                    "status": "ok",
                    "content_hash": content.hash_bytes(data),
                }
            )
        return out
