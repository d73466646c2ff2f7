"""Resources inside an encrypted folder, when the server has its key ($HYCLOUD_PASSPHRASE or
$HYCLOUD_KEY_FILE, as the CLI takes it): PROPFIND lists the decrypted names, GET decrypts (every
object checked before the first byte is answered), PUT seals the body through the encrypted
upload path and answers once it is in the cloud (not through the write-back cache: its flusher
sends plaintext). COPY and MOVE within the folder reuse every chunk; across its edge the files
are decrypted and sealed again here (encrypted/crossing.py). Without a key, writes into the
folder answer 403, and it is shown as stored (provider.py).
"""

from __future__ import annotations

import tempfile
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from wsgidav import util
from wsgidav.dav_error import HTTP_FORBIDDEN, DAVError
from wsgidav.dav_provider import DAVCollection, DAVNonCollection

from hycloud_core import paths
from hycloud_core.errors import HyCloudError

from ..caches import Caches
from ..encrypted.routing import Located
from ..encrypted.view import SealedView
from .auth import CACHES_KEY

ENTRIES_KEY = "hycloud.entries"  # the request's looked-up entries (provider.py), stale after a change

_VIEWS: weakref.WeakKeyDictionary[Caches, SealedView] = weakref.WeakKeyDictionary()


def view_of(environ: dict) -> SealedView:
    """The requesting user's view of encrypted folders, kept as long as their caches."""
    caches: Caches = environ[CACHES_KEY]
    view = _VIEWS.get(caches)
    if view is None:
        view = _VIEWS.setdefault(
            caches, SealedView(caches.client, kept=caches.meta.listing_kept, ttl=caches.meta.ttl)
        )
    view.client = caches.client  # the key that last logged in, as the caches send with
    return view


def remote(path: str) -> str:
    return paths.normalize("/" + path.strip("/"))


@contextmanager
def sealed_errors(environ: dict) -> Iterator[None]:
    """Refusals keep their status (404, 409...; 422 for a check that failed, 403 without a key);
    what this request looked up is stale afterwards."""
    try:
        yield
    except HyCloudError as err:
        status = err.status or 502
        raise DAVError(status if 400 <= status < 600 else 502, err.message) from err
    except PermissionError as err:
        raise DAVError(HTTP_FORBIDDEN, str(err)) from err
    finally:
        environ.get(ENTRIES_KEY, {}).clear()


def write_target(environ: dict, path: str, what: str) -> Located | None:
    """Where a write of `path` lands when inside an encrypted folder (asked once per folder, kept);
    403 when the server has no key for it: the body would be stored as plaintext."""
    view = view_of(environ)
    with sealed_errors(environ):
        where = view.roots.locate(remote(path), itself=False)
    if where is None:
        return None
    if view.opened(where, remote(path)) is None:
        raise DAVError(
            HTTP_FORBIDDEN,
            f"{where.root} is an encrypted folder and its key is not available to this server: {what} "
            "would store plaintext in it (set HYCLOUD_PASSPHRASE or HYCLOUD_KEY_FILE for hycloud serve)",
        )
    return where


def resource(path: str, environ: dict, entry: dict | None, where: Located) -> SealedFile | SealedFolder:
    kind = SealedFolder if entry is not None and entry["type"] == "dir" else SealedFile
    return kind(path, environ, entry, where)


def copy_or_move(environ: dict, src_path: str, src: Located | None, dest_path: str, move: bool) -> None:
    """A copy or move with an end in an encrypted folder: within one, chunks reused; else through
    this machine. Any resource at the destination was removed first (WsgiDAV's Overwrite)."""
    view = view_of(environ)
    dst = write_target(environ, dest_path, "MOVE" if move else "COPY")
    caches: Caches = environ[CACHES_KEY]
    with sealed_errors(environ):
        if src is not None and dst is not None and src.root == dst.root:
            (view.move if move else view.copy)(src, dst)
            return
        source = remote(src_path)
        caches.files.sync([source, *caches.files.under(source)])  # a plain source's cached writes land
        view.across(source, remote(dest_path), src, dst, move)
        caches.meta.forget(source, remote(dest_path))


class _Sealed:
    if TYPE_CHECKING:  # given by the WsgiDAV resource class this is mixed into
        environ: dict[str, Any]
        path: str
        name: str

    def _init(self, entry: dict | None, where: Located) -> None:
        self.entry, self.where = entry, where
        self.view = view_of(self.environ)

    def get_creation_date(self) -> float:
        return float((self.entry or {}).get("mtime", 0.0))

    def get_last_modified(self) -> float:
        return float((self.entry or {}).get("mtime", 0.0))

    def get_display_name(self) -> str:
        return self.name

    def support_recursive_move(self, dest_path: str) -> bool:
        return True

    def move_recursive(self, dest_path: str) -> None:
        copy_or_move(self.environ, self.path, self.where, dest_path, move=True)


class SealedFile(_Sealed, DAVNonCollection):
    def __init__(self, path: str, environ: dict, entry: dict | None, where: Located) -> None:
        DAVNonCollection.__init__(self, path, environ)
        self._init(entry, where)

    def get_content_length(self) -> int:
        return int((self.entry or {}).get("size", 0))

    def get_content_type(self) -> str:
        return util.guess_mime_type(self.path)

    def get_etag(self) -> str:
        entry = self.entry or {}
        return str(entry.get("sha256") or f"{entry.get('size', 0):x}-{entry.get('mtime', 0):.6f}")

    def support_etag(self) -> bool:
        return True

    def support_ranges(self) -> bool:
        return True

    def get_content(self) -> IO[bytes]:
        """The plaintext, decrypted and checked whole into a private temporary file first."""
        out = tempfile.TemporaryFile(prefix="hycloud-dav-sealed-")
        with tempfile.TemporaryDirectory(prefix="hycloud-dav-sealed-") as tmp:
            local = Path(tmp) / "plain"
            with sealed_errors(self.environ):
                self.view.read_to(self.where, local)
            with open(local, "rb") as plain:
                while block := plain.read(1 << 20):
                    out.write(block)
        out.seek(0)
        return out

    def begin_write(self, *, content_type: str | None = None) -> _SealingWriter:
        if self.view.opened(self.where, remote(self.path)) is None:
            raise DAVError(HTTP_FORBIDDEN, f"{self.where.root}: its key is not available to this server")
        return _SealingWriter(self)

    def end_write(self, *, with_errors: bool) -> None:
        self.environ.get(ENTRIES_KEY, {}).clear()

    def delete(self) -> None:
        with sealed_errors(self.environ):
            self.view.remove(self.where, folder=False)
        self.remove_all_properties(recursive=True)
        self.remove_all_locks(recursive=True)

    def copy_move_single(self, dest_path: str, *, is_move: bool) -> None:
        copy_or_move(self.environ, self.path, self.where, dest_path, move=is_move)


class _SealingWriter:
    """A PUT's body in a private temporary file; sealed and sent on close (the PUT's answer waits
    for it, and fails with its error)."""

    def __init__(self, file: SealedFile) -> None:
        self.file = file
        self.tmp = tempfile.TemporaryDirectory(prefix="hycloud-dav-sealed-")
        self.local = Path(self.tmp.name) / "body"
        self.out = open(self.local, "wb")  # noqa: SIM115 (closed in close)
        self.closed = False

    def write(self, data: bytes) -> int:
        return self.out.write(data)

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        try:
            self.out.close()
            with sealed_errors(self.file.environ):
                self.file.view.write_from(self.file.where, self.local)
        finally:
            self.tmp.cleanup()


class SealedFolder(_Sealed, DAVCollection):
    def __init__(self, path: str, environ: dict, entry: dict | None, where: Located) -> None:
        DAVCollection.__init__(self, path, environ)
        self._init(entry, where)
        self._members: dict[str, dict] | None = None

    def get_etag(self) -> None:
        return None

    def _listing(self) -> dict[str, dict]:
        if self._members is None:
            with sealed_errors(self.environ):
                self._members = {e["name"]: e for e in self.view.listing(self.where)}
        return self._members

    def get_member_names(self) -> list[str]:
        return list(self._listing())

    def get_member(self, name: str) -> SealedFile | SealedFolder | None:
        entry = self._listing().get(name)
        if entry is None:
            return None
        return resource(util.join_uri(self.path, name), self.environ, entry, self._child(name))

    def _child(self, name: str) -> Located:
        return Located(self.where.root, f"{self.where.inner}/{name}" if self.where.inner else name)

    def create_empty_resource(self, name: str) -> SealedFile:
        """Nothing is written yet: the PUT's body follows and is sealed with it."""
        if self.view.opened(self.where, remote(self.path)) is None:
            raise DAVError(HTTP_FORBIDDEN, f"{self.where.root}: its key is not available to this server")
        return SealedFile(util.join_uri(self.path, name), self.environ, None, self._child(name))

    def create_collection(self, name: str) -> None:
        with sealed_errors(self.environ):
            self.view.mkdir(self._child(name))

    def delete(self) -> None:
        if not self.where.inner:
            raise DAVError(HTTP_FORBIDDEN, "the encrypted folder itself is removed outside it")
        with sealed_errors(self.environ):
            self.view.remove(self.where, recursive=True)
        self.remove_all_properties(recursive=True)
        self.remove_all_locks(recursive=True)

    def handle_delete(self) -> bool:
        self.delete()
        return True

    def handle_copy(self, dest_path: str, *, depth_infinity: bool) -> bool:
        """The whole tree at once (Depth: infinity): chunks reused within the folder."""
        if not depth_infinity:
            return False
        copy_or_move(self.environ, self.path, self.where, dest_path, move=False)
        return True

    def copy_move_single(self, dest_path: str, *, is_move: bool) -> None:
        """One level of a member-by-member copy: the folder itself."""
        dst = write_target(self.environ, dest_path, "COPY")
        with sealed_errors(self.environ):
            if dst is not None:
                if self.view.entry(dst) is None:
                    self.view.mkdir(dst)
            else:
                view_of(self.environ).client.mkdir(remote(dest_path), parents=True)
