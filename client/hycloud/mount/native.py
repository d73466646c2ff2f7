"""`hycloud mount --native`: a compiled daemon (`client/native`, Go) answers the kernel from a
local copy of the mounted tree, and this process keeps that copy and the cloud in step.

Why: each FUSE request answered in Python costs 40-150 µs on a small machine (`bench/results/
mount_profile.md`), and a `git clone` makes thousands of them; the daemon answers one with a
system call on the local copy. The daemon asks this process only the first time it needs the
cloud: to list a folder before its first lookup (its files become stubs: sparse files of the
cloud's size and mtime, marked `user.hycloud.stub`) and to fetch a stub before its first open.
It tells every change it made (file written and closed, made, moved, removed); `changes.py`
sends them in order, in bundles.

Consistency: within the mount, POSIX (it is a local folder). A file is durable in the cloud when
`fsync` returns or the unmount ends. Other clients' changes: a folder used more than the kernel's
timeout (30 s) after its last listing is listed again in the background (`relist.py`), and what
changed in the cloud is merged into the local copy, except into files changed here and not sent. Encrypted folders
are refused (EACCES): they open through the standard mount.
"""

from __future__ import annotations

import errno
import itertools
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import uuid
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import IO

from hycloud_core.crypto import header as hdr
from hycloud_core.errors import ForbiddenError, HyCloudError, NotFoundError

from ..caches.writeback import LIMIT
from ..sdk import HyCloud, bundles
from .bound import Bound
from .changes import Changes, Upload
from .relist import Relister
from .watch import watch

STUB, LISTED = "user.hycloud.stub", "user.hycloud.listed"
DAEMON = "hycloud-fused"
KERNEL_TTL_S = 30.0  # how long the kernel keeps answers, and a folder's listing is trusted


URING_SWITCH = Path("/sys/module/fuse/parameters/enable_uring")  # Linux 6.14+, root sets it


def mounted_note(directory: str, transport: str, io_uring: bool = True) -> str:
    """The line a user sees once the mount is up: how the kernel's requests come and, where the
    kernel has FUSE over io_uring but it is off, how to turn it on (root only, so not done here)."""
    line = f"mounted on {directory}: the kernel's requests come over {transport}"
    try:
        off = URING_SWITCH.read_text().strip() == "N"
    except OSError:  # an older kernel, or no fuse module loaded
        off = False
    if io_uring and transport != "io_uring" and off:
        line += (
            f"; FUSE over io_uring, about twice as fast per request, is off in this kernel: "
            f"as root, `echo Y > {URING_SWITCH}`, then mount again"
        )
    return line


def daemon_path() -> Path:
    """The daemon built by `make setup` (client/native), `$HYCLOUD_FUSED`, or one on PATH."""
    named = os.environ.get("HYCLOUD_FUSED")
    if named:
        return Path(named)
    built = Path(__file__).resolve().parents[2] / "native" / DAEMON
    if built.is_file():
        return built
    found = shutil.which(DAEMON)
    if found is None:
        raise HyCloudError(
            f"{DAEMON} not found: build it with `make setup` (needs Go) or set HYCLOUD_FUSED",
            code="mount-failed",
            status=400,
        )
    return Path(found)


class Questions:
    """The daemon's questions: list a folder, fetch a file, make changes durable."""

    def __init__(self, client: HyCloud, local: Path, incoming: Path, changes: Changes) -> None:
        self.client, self.local, self.incoming, self.changes = client, local, incoming, changes
        self.fetched: Callable[[str, os.stat_result], None] = lambda path, st: None
        self.relister = Relister(client, local, changes)

    def list(self, rel: str) -> None:
        if self.changes.moves_waiting():  # a folder moved or removed in the cloud first
            self.changes.sync()
        folder = "/" + rel
        entries = list(self.client.iter_dir(folder))
        if any(e["name"] == hdr.NAME for e in entries):
            raise ForbiddenError(f"{folder} is an encrypted folder: use the standard mount")
        here = self.local / rel
        for entry in entries:
            path = here / entry["name"]
            if entry["type"] == "dir":
                path.mkdir(exist_ok=True)
            else:
                _stub(path, int(entry["size"]), float(entry["mtime"]))
        self.changes.listed(f"{folder.rstrip('/')}/{e['name']}" for e in entries)
        self.relister.listed(folder, entries)
        os.setxattr(here, LISTED, b"1")

    def fetch(self, rel: str) -> None:
        local = self.local / rel
        target = self.incoming / uuid.uuid4().hex
        try:
            self.client.get("/" + rel, target)
            st = local.stat()
            os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns))
            os.replace(target, local)  # whole, or not at all: the stub stays until then
        finally:
            target.unlink(missing_ok=True)
        self.fetched("/" + rel, local.stat())  # no write yet: the daemon waits on this answer

    def sync(self, rel: str) -> None:
        failed = self.changes.sync("/" + rel)
        if "/" + rel in failed:
            raise HyCloudError(failed["/" + rel], code="not-sent")


def _stub(path: Path, size: int, mtime: float) -> None:
    """A cloud file's stand-in until its first read; a local file of that name is left alone.
    Made here for a folder's first listing (the daemon waits on it); a later listing's new names
    are made by the daemon (`added` in client/native/relist.go), which keeps the same form."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:
        return
    try:
        os.ftruncate(fd, size)
        os.setxattr(fd, STUB, b"1")
    finally:
        os.close(fd)
    os.utime(path, (mtime, mtime))


def _errno(err: BaseException) -> int:
    if isinstance(err, NotFoundError | FileNotFoundError):
        return errno.ENOENT
    if isinstance(err, ForbiddenError | PermissionError):
        return errno.EACCES
    return errno.EIO


class Daemon:
    """The daemon process and its pipe: questions answered on a pool, changes in order."""

    def __init__(self, proc: subprocess.Popen, questions: Questions, changes: Changes) -> None:
        self.proc, self.questions, self.changes = proc, questions, changes
        self.mounted = threading.Event()
        self.on_mounted: Callable[[str], None] | None = None  # told the transport, once up
        self._out_lock = threading.Lock()
        self._pool = ThreadPoolExecutor(8, thread_name_prefix="hycloud-native-ask")
        self._asked: dict[int, Future[int]] = {}
        self._asked_lock = threading.Lock()
        self._ended = False
        self._ids = itertools.count(1)

    def ask(self, op: str, rel: str, **fields: object) -> int:
        """A question to the daemon (`evict`); its errno, EIO once it has ended (asked before
        its end: answered at it; after: at once)."""
        future: Future[int] = Future()
        key = next(self._ids)
        with self._asked_lock:
            if self._ended:
                return errno.EIO
            self._asked[key] = future
        if not self._write({"id": key, "op": op, "path": rel, **fields}):
            self._answered(key, errno.EIO)
        return future.result()

    def _answered(self, key: int, code: int) -> None:
        with self._asked_lock:
            future = self._asked.pop(key, None)
        if future is not None:
            future.set_result(code)

    def serve(self) -> None:
        """Until the daemon ends (unmounted): each line read is a question or a change."""
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            msg = json.loads(line)
            op, path = msg.get("op"), "/" + msg.get("path", "")
            if op is None:  # the answer to a question of ours
                self._answered(msg["id"], msg.get("errno", 0))
            elif op == "mounted":
                self.mounted.set()
                if self.on_mounted is not None:
                    self.on_mounted(msg.get("transport", ""))
            elif msg.get("id"):
                self._pool.submit(self._answer, msg)
            elif op == "stale":  # a folder used long after its listing: merged, not waited on
                self._pool.submit(self.questions.relister.relist, msg.get("path", ""))
            else:
                self.changes.tell(op, path, "/" + msg.get("to", ""))
        self._pool.shutdown(wait=True)
        with self._asked_lock:
            self._ended = True
            unanswered = list(self._asked)
        for key in unanswered:
            self._answered(key, errno.EIO)

    def _answer(self, msg: dict) -> None:
        op, rel, code = msg["op"], msg.get("path", ""), 0  # the root's path is empty: left out
        try:
            getattr(self.questions, op)(rel)
        except Exception as err:
            code = _errno(err)
            print(f"hycloud mount: {op} /{rel}: {err}", file=sys.stderr)
        finally:
            self._write({"id": msg["id"], "errno": code})

    def _write(self, msg: dict) -> bool:
        stdin: IO[str] | None = self.proc.stdin
        with self._out_lock:
            try:
                assert stdin is not None
                stdin.write(json.dumps(msg) + "\n")
                stdin.flush()
                return True
            except (BrokenPipeError, ValueError):
                return False  # the daemon has ended


def mount_native(
    client: HyCloud,
    mountpoint: str,
    cache_dir: str | None = None,
    upload: Upload | None = None,
    signals: bool = True,
    cache_size: int = LIMIT,
    ttl: float = KERNEL_TTL_S,
    on_mounted: Callable[[str], None] | None = None,
    io_uring: bool = True,
) -> None:
    """Mount until unmounted (`fusermount3 -u DIR`), SIGTERM or Ctrl-C; then send everything.
    The local copy is kept within `cache_size` (`bound.py`); a folder is listed again when used
    `ttl` seconds after its last listing (`relist.py`). `signals`: SIGTERM, SIGINT and SIGHUP unmount (a caller's thread other than the main one:
    False). `on_mounted` hears how the kernel's requests come ("io_uring" where the kernel allows
    it, else "/dev/fuse") once the mount is up; `io_uring` False keeps to /dev/fuse."""
    root = Path(tempfile.mkdtemp(prefix="hycloud-native-", dir=cache_dir))
    local, incoming = root / "tree", root / "incoming"
    local.mkdir()
    incoming.mkdir()
    changes = Changes(client, local, upload or (lambda pairs: bundles.put_files(client, pairs)))
    args = [str(daemon_path()), "-backing", str(local), "-ttl", f"{ttl:g}s"]
    args += [f"-io-uring={str(io_uring).lower()}", mountpoint]
    proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
    questions = Questions(client, local, incoming, changes)
    daemon = Daemon(proc, questions, changes)
    bound = Bound(local, cache_size, lambda rel, ctime: daemon.ask("evict", rel, ctime=ctime), changes.clean)
    questions.relister.ask, questions.relister.ctime = daemon.ask, bound.ctime

    def fetched_or_sent(path: str, st: os.stat_result) -> None:
        bound.touched(path, st)
        questions.relister.sent(path, st)

    questions.fetched = changes.on_sent = fetched_or_sent
    stop = lambda signum, frame: proc.send_signal(signal.SIGTERM)  # noqa: E731  the daemon unmounts
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP) if signals else ():
        signal.signal(signum, stop)
    watch(mountpoint, lambda: proc.send_signal(signal.SIGUSR1), daemon.mounted)  # see watch.py
    daemon.on_mounted = on_mounted
    daemon.serve()
    code = proc.wait()
    bound.stop()
    failed = changes.stop()
    if not daemon.mounted.is_set():  # the daemon said why on stderr
        shutil.rmtree(root, ignore_errors=True)
        raise HyCloudError(
            f"cannot mount on {mountpoint} (daemon exit {code})", code="mount-failed", status=400
        )
    if failed:
        raise HyCloudError(f"{len(failed)} files not sent, kept in {local}", code="not-sent")
    shutil.rmtree(root, ignore_errors=True)
