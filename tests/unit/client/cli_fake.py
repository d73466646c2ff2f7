"""An in-memory HyCloud with the SDK calls the CLI's commands make, answering failures with the
cloud's error classes and codes (a listing of a file is 409 `not-a-directory`, a read of a
folder 409 `is-a-directory`), and `run` to drive the CLI in-process against it."""

from __future__ import annotations

import hashlib
import io
import time
from pathlib import Path

import pytest

from hycloud.sdk import HyCloud
from hycloud.transfer.config import DEFAULT
from hycloud_core import bundle, content, paths
from hycloud_core.errors import ConflictError, HyCloudError, NotFoundError
from hycloud_core.merkle import DirEntry, FileEntry, Responder, build_tree


class FakeHyCloud:
    NotFoundError = NotFoundError
    ConflictError = ConflictError
    small_file_threshold = 1024
    transfer = DEFAULT

    def __init__(self) -> None:
        self.files: dict[str, dict] = {}  # path -> {"data", "mtime", "mode"}
        self.dirs: dict[str, float] = {"/": 0.0}
        self.calls: list[str] = []
        self.last_transfer: dict = {}
        self.http = FakeHttp(self)
        self.fail: dict[str, str] = {}  # path -> error message its upload or download fails with

    # --- helpers for tests ----------------------------------------------------------------------
    def add(self, path: str, data: bytes, mtime: float = 1_000_000_000.0, mode: int = 0o644) -> None:
        path = paths.normalize(path)
        self._make_parents(path)
        self.files[path] = {"data": data, "mtime": mtime, "mode": mode}

    def _make_parents(self, path: str) -> None:
        while (path := paths.parent(path)) != "/":
            self.dirs.setdefault(path, 0.0)

    def _entry(self, path: str) -> dict:
        name = path.rsplit("/", 1)[1] or "/"
        if path in self.dirs:
            return {"name": name, "path": path, "type": "dir", "size": 0, "mtime": self.dirs[path]}
        f = self.files[path]
        storage = "small" if len(f["data"]) <= self.small_file_threshold else "large"
        entry = {"name": name, "path": path, "type": "file", "size": len(f["data"]), "mtime": f["mtime"]}
        entry.update(storage=storage, mode=f["mode"])
        if storage == "large":
            entry["content_hash"] = content.hash_bytes(f["data"])
        return entry

    def _require_parent(self, path: str, parents: bool) -> None:
        parent = paths.parent(path)
        if parent in self.files:
            raise ConflictError(f"{parent} is not a directory", code="not-a-directory")
        if parent not in self.dirs:
            if not parents:
                raise NotFoundError(f"{parent} not found")
            self._make_parents(path)

    def _dir(self, path: str) -> str:
        """The folder's normalized path; a file there is 409 `not-a-directory`, nothing there 404."""
        path = paths.normalize(path)
        if path in self.dirs:
            return path
        if path in self.files:
            raise ConflictError(f"{path} is not a directory", code="not-a-directory")
        raise NotFoundError(f"{path} not found")

    def _file(self, path: str) -> dict:
        path = paths.normalize(path)
        if path in self.dirs:
            raise ConflictError(f"{path} is a directory", code="is-a-directory")
        if path not in self.files:
            raise NotFoundError(f"{path} not found")
        return self.files[path]

    # --- the SDK calls --------------------------------------------------------------------------
    def merkle_children(self, asked: list[str]) -> dict:
        """The cloud's side of the Merkle exchange, over what the fake holds."""
        self.calls.append("merkle")
        entries = {d: DirEntry() for d in self.dirs}
        for p, f in self.files.items():
            entries[p] = FileEntry(bytes.fromhex(content.hash_bytes(f["data"])), f["mtime"])
        return Responder(build_tree(entries)).answer(asked)

    def stat(self, path: str) -> dict:
        self.calls.append(f"stat {path}")
        path = paths.normalize(path)
        if path not in self.files and path not in self.dirs:
            raise NotFoundError(f"{path} not found")
        return self._entry(path)

    exists = HyCloud.exists  # the SDK's own: a stat, and NotFoundError means no

    def iter_dir(self, path: str = "/"):
        self.calls.append(f"list {path}")
        path = self._dir(path)
        children = [p for p in [*self.dirs, *self.files] if p != "/" and paths.parent(p) == path]
        return iter([self._entry(p) for p in sorted(children)])

    def ls(self, path: str = "/") -> list[dict]:
        return list(self.iter_dir(path))

    def mkdir(self, path: str, parents: bool = False, exist_ok: bool = True) -> dict:
        path = paths.normalize(path)
        if path in self.files or (path in self.dirs and not exist_ok):
            raise ConflictError(f"{path} already exists", code="already-exists")
        self._require_parent(path, parents)
        self.dirs.setdefault(path, time.time())
        return self._entry(path)

    def put_bytes(self, path, data, parents=False, mtime=None, mode=None, expect=None) -> dict:
        self.calls.append(f"put {path}")
        path = paths.normalize(path)
        self._check(path, expect)
        self._require_parent(path, parents)
        self.files[path] = {"data": bytes(data), "mtime": mtime or time.time(), "mode": mode or 0o640}
        return {**self._entry(path), "content_hash": content.hash_bytes(data)}

    def put(self, local, remote, parents=False, progress=None, mtime=None, mode=None, expect=None, **_):
        entry = self.put_bytes(remote, Path(local).read_bytes(), parents, mtime, mode, expect)
        self.last_transfer = {"mode": "small"}
        return entry

    def _check(self, path: str, expect: str | None) -> None:
        if expect is None:
            return
        held = content.hash_bytes(self.files[path]["data"]) if path in self.files else "absent"
        if held != expect:
            raise ConflictError(f"{path} is not at the expected version", code="version-mismatch")

    def get_bytes(self, path: str, progress=None) -> bytes:
        self.calls.append(f"get {path}")
        return self._file(path)["data"]

    def get(self, remote, local, progress=None, **_) -> Path:
        Path(local).write_bytes(self.get_bytes(remote))
        self.last_transfer = {"mode": "small"}
        return Path(local)

    def open(self, path: str, mode: str = "rb", **_):
        if mode != "rb":
            raise HyCloudError("the fake reads only", code="bad-mode", status=400)
        self.calls.append(f"open {path}")
        return io.BufferedReader(io.BytesIO(self._file(path)["data"]))

    def _fetch(self, path: str):
        """GET /v1/files as the SDK's file objects read it (every file served whole here)."""
        self.calls.append(f"get {path}")
        data = self._file(path)["data"]
        return type("Response", (), {"headers": {}, "content": data, "status_code": 200})()

    def rmdir(self, path: str, recursive: bool = False, progress=None) -> dict:
        self.calls.append(f"rmdir {path}")
        path = self._dir(path)
        below = [p for p in [*self.dirs, *self.files] if p.startswith(path + "/")]
        if below and not recursive:
            raise ConflictError(f"{path} is not empty", code="not-empty")
        for p in [*below, path]:
            self.dirs.pop(p, None)
            self.files.pop(p, None)
        return {"removed": path, "files": len(below)}

    def mv(self, src: str, dst: str, progress=None) -> dict:
        self.calls.append(f"mv {src} {dst}")
        src, dst = paths.normalize(src), paths.normalize(dst)
        self._require_parent(dst, False)
        if src in self.files:
            self.files[dst] = self.files.pop(src)
        elif src in self.dirs:
            for p in sorted(p for p in [*self.dirs, *self.files] if p == src or p.startswith(src + "/")):
                moved = dst + p[len(src) :]
                if p in self.dirs:
                    self.dirs[moved] = self.dirs.pop(p)
                else:
                    self.files[moved] = self.files.pop(p)
        else:
            raise NotFoundError(f"{src} not found")
        return self._entry(dst)

    def rm(self, path: str, expect=None) -> dict:
        self.calls.append(f"rm {path}")
        self._file(path)
        del self.files[paths.normalize(path)]
        return {"removed": path}

    def cp(self, src: str, dst: str, progress=None) -> dict:
        self.calls.append(f"cp {src} {dst}")
        f = self._file(src)
        self._require_parent(paths.normalize(dst), False)
        self.files[paths.normalize(dst)] = dict(f)
        return self._entry(paths.normalize(dst))


class FakeHttp:
    """The raw routes the CLI calls: `GET /v1/bundles/tree` (one page, folders first), which tree
    downloads list by, and `POST /v1/bundles/download`, by which every command looks for an
    encrypted folder's header above its path."""

    def __init__(self, cloud: FakeHyCloud) -> None:
        self.cloud = cloud

    def request(self, method: str, route: str, json: dict | None = None, **_) -> FakeResponse:
        assert (method, route) == ("POST", "/v1/bundles/download"), (method, route)
        found = [(p, self.cloud.files[p]["data"]) for p in json["paths"] if p in self.cloud.files]
        members = [(bundle.Member(p, len(d), hashlib.sha256(d).hexdigest()), d) for p, d in found]
        return FakeResponse(bundle.pack(members))

    def json(self, method: str, route: str, params: dict | None = None, **_) -> dict:
        assert (method, route) == ("GET", "/v1/bundles/tree"), (method, route)
        root = paths.normalize(params["path"])
        if root not in self.cloud.dirs:
            raise NotFoundError(f"{root} not found")
        below = sorted(
            p for p in [*self.cloud.dirs, *self.cloud.files] if p.startswith(root.rstrip("/") + "/")
        )
        rel = [(p[len(root) :].lstrip("/"), "dir" if p in self.cloud.dirs else "file") for p in below]
        return {"entries": [{"rel": r, "type": t} for r, t in rel], "cursor": None}


def set_to_fail(cloud: FakeHyCloud, remote: str) -> dict | None:
    """The error result of a file a test set to fail (`cloud.fail`), else None."""
    if remote not in cloud.fail:
        return None
    return {"path": remote, "status": "error", "error": cloud.fail[remote], "code": "internal-error"}


def fake_put_files(cloud: FakeHyCloud, pairs, progress=None, expect=None, parallel=None) -> list[dict]:
    """bundles.put_files against the fake: one result per pair, in order."""
    cloud.calls.append(f"put_files {len(pairs)} parallel={parallel}")
    return [set_to_fail(cloud, remote) or put_one(cloud, local, remote) for local, remote in pairs]


def put_one(cloud: FakeHyCloud, local: str, remote: str) -> dict:
    st = Path(local).stat()
    entry = cloud.put_bytes(remote, Path(local).read_bytes(), True, st.st_mtime, st.st_mode & 0o777)
    return {**entry, "status": "ok"}


def fake_get_files(cloud: FakeHyCloud, pairs, progress=None, parallel=None) -> list[dict]:
    cloud.calls.append(f"get_files {len(pairs)} parallel={parallel}")
    return [set_to_fail(cloud, remote) or get_one(cloud, remote, local) for remote, local in pairs]


def get_one(cloud: FakeHyCloud, remote: str, local: str) -> dict:
    Path(local).parent.mkdir(parents=True, exist_ok=True)
    data = cloud.get_bytes(remote)
    Path(local).write_bytes(data)
    return {"path": remote, "status": "ok", "local": str(local), "size": len(data)}


class FakeResponse:
    def __init__(self, body: bytes) -> None:
        self.content = body


class LinkAnswer:
    """The API's answer for a large file: its link (presigned URL, size, content hash), as JSON."""

    headers = {"Content-Type": "application/vnd.hycloud.link+json"}

    def __init__(self, link: dict) -> None:
        self._link = link

    def json(self) -> dict:
        return self._link


@pytest.fixture
def cloud(monkeypatch, tmp_path) -> FakeHyCloud:
    """The fake every command of an in-process CLI run talks to (tree transfers included)."""
    from hycloud.sdk import bundles

    fake = FakeHyCloud()
    monkeypatch.setenv("HYCLOUD_STATE", str(tmp_path / "state.sqlite3"))
    monkeypatch.setattr(HyCloud, "from_config", classmethod(lambda cls, profile=None, transfer=None: fake))
    monkeypatch.setattr(bundles, "put_files", lambda client, *a, **k: fake_put_files(fake, *a, **k))
    monkeypatch.setattr(bundles, "get_files", lambda client, *a, **k: fake_get_files(fake, *a, **k))
    return fake


def run(*args: str) -> int:
    """Run `hycloud ARGS` in-process; its exit code (0 when it returned)."""
    from hycloud.cli.main import main

    try:
        main(list(args))
    except SystemExit as done:
        return int(done.code or 0)
    return 0
