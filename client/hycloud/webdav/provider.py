"""The DAV provider: resources backed by SDK calls on the requesting user's own client, through
that user's caches (`workspaces.py`), the mount's own.

Listings come from the metadata cache (one `ls` per folder per few seconds; a stat that misses
lists its folder once; members are built from its entries, not stat'ed one by one). GET reads a
cached copy, else the SDK's ranged reads. PUT writes into the write-back cache (`cached.py`): small
files travel to the cloud in bundles shortly after. Copies and moves are the API's own, so large
trees move as cloud jobs; what the cache holds below them is sent first.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from wsgidav import util
from wsgidav.dav_error import HTTP_FORBIDDEN, DAVError
from wsgidav.dav_provider import DAVCollection, DAVNonCollection, DAVProvider

from hycloud_core.errors import HyCloudError, NotFoundError

from ..caches import Caches
from ..encrypted.routing import Located
from ..sdk import HyCloud
from . import sealed
from .auth import CACHES_KEY, CLIENT_KEY
from .cached import CacheWriter, cached_entry, create_empty, open_cached, send_under

ENTRIES_KEY = "hycloud.entries"


@contextmanager
def dav_errors() -> Iterator[None]:
    """API errors keep their status (404, 409, 403, 507 for quota...) as DAV errors."""
    try:
        yield
    except HyCloudError as err:
        status = err.status or 502
        if err.code == "quota-exceeded":
            status = 507
        raise DAVError(status if 400 <= status < 600 else 502, err.message) from err


def _remote(path: str) -> str:
    return "/" + path.strip("/")


def refuse_sealed(environ: dict, path: str, what: str) -> None:
    """403 for a plain write over a stored object of an encrypted folder (its ciphertext, seen
    before the folder was known): the cloud must never hold plaintext there. Which folders are
    encrypted is asked once per folder and kept for the server's life (a folder becomes
    encrypted only by `mkdir --encrypted`/`crypt init`)."""
    with dav_errors():
        where = sealed.view_of(environ).roots.locate(_remote(path), itself=False)
    if where is not None:
        raise DAVError(
            HTTP_FORBIDDEN, f"{where.root} is an encrypted folder: {what} would store plaintext in it"
        )


class _Entry:
    """What both kinds of resource share: the stat entry and the request's client."""

    if TYPE_CHECKING:  # given by the WsgiDAV resource class this is mixed into
        environ: dict[str, Any]
        name: str
        path: str
        is_collection: bool
        provider: Any

        def get_ref_url(self) -> str: ...

    def _setup(self, entry: dict, client: HyCloud) -> None:
        self.entry, self.client = entry, client
        self.caches: Caches = self.environ[CACHES_KEY]

    @property
    def remote(self) -> str:
        return _remote(self.path)

    @contextmanager
    def changing(self, *paths: str) -> Iterator[None]:
        """A change to `paths`: what this request has stat'ed so far, and what the metadata cache
        holds about them, may be stale afterwards."""
        try:
            with dav_errors():
                yield
        finally:
            self.environ.get(ENTRIES_KEY, {}).clear()
            if paths:
                self.caches.meta.forget(*map(_remote, paths))

    def get_creation_date(self) -> float:
        return self.entry.get("mtime", 0.0)

    def get_last_modified(self) -> float:
        return self.entry.get("mtime", 0.0)

    def get_display_name(self) -> str:
        return self.name

    def _ref_url(self, path: str) -> str:
        """The key WsgiDAV keeps locks and properties under for `path`, as `get_ref_url` makes it."""
        if self.is_collection and not path.endswith("/"):
            path += "/"
        return quote((self.provider.share_path or "") + path)

    def _dead_properties(self, dest_path: str, *, is_move: bool, with_children: bool) -> None:
        manager = self.provider.prop_manager
        if not manager:
            return
        dest = self._ref_url(dest_path)
        if is_move:
            manager.move_properties(
                self.get_ref_url(), dest, with_children=with_children, environ=self.environ
            )
        else:
            manager.copy_properties(self.get_ref_url(), dest, self.environ)


class RemoteFile(_Entry, DAVNonCollection):
    def __init__(self, path: str, environ: dict, entry: dict, client: HyCloud) -> None:
        DAVNonCollection.__init__(self, path, environ)
        self._setup(entry, client)

    def get_content_length(self) -> int:
        return self.entry.get("size", 0)

    def get_content_type(self) -> str:
        return util.guess_mime_type(self.path)

    def get_etag(self) -> str:
        """The content hash where the API gives one, else size and mtime (as a filesystem would)."""
        return (
            self.entry.get("content_hash")
            or f"{self.entry.get('size', 0):x}-{self.entry.get('mtime', 0):.6f}"
        )

    def support_etag(self) -> bool:
        return True

    def support_ranges(self) -> bool:
        return True

    def get_content(self):
        with dav_errors():
            return open_cached(self.caches, self.remote) or self.client.open(self.remote, "rb")

    def begin_write(self, *, content_type: str | None = None):
        """The body goes to the write-back cache (a new file is there already: `create_empty`)."""
        refuse_sealed(self.environ, self.path, "PUT")
        with dav_errors():
            return CacheWriter(self.caches, self.remote, in_cloud=True)

    def end_write(self, *, with_errors: bool) -> None:
        self.environ.get(ENTRIES_KEY, {}).clear()

    def delete(self) -> None:
        """A file only in the cache (never sent) is removed without a request."""
        with self.changing(self.path):
            cached = self.caches.files.drop(self.remote)
            if cached is None or cached.in_cloud:
                try:
                    self.client.rm(self.remote)
                except NotFoundError:
                    if cached is None:
                        raise
        self.remove_all_properties(recursive=True)
        self.remove_all_locks(recursive=True)

    def copy_move_single(self, dest_path: str, *, is_move: bool) -> None:
        if sealed.write_target(self.environ, dest_path, "MOVE" if is_move else "COPY") is not None:
            return sealed.copy_or_move(self.environ, self.path, None, dest_path, is_move)  # sealed here
        with self.changing(self.path, dest_path):
            self.caches.files.sync([self.remote])
            self.caches.files.drop(_remote(dest_path))
            (self.client.mv if is_move else self.client.cp)(self.remote, _remote(dest_path))
            if is_move:
                self.caches.files.move(self.remote, _remote(dest_path))
        self._dead_properties(dest_path, is_move=is_move, with_children=False)

    def support_recursive_move(self, dest_path: str) -> bool:
        return True

    def move_recursive(self, dest_path: str) -> None:
        self.copy_move_single(dest_path, is_move=True)


class RemoteFolder(_Entry, DAVCollection):
    def __init__(self, path: str, environ: dict, entry: dict, client: HyCloud) -> None:
        DAVCollection.__init__(self, path, environ)
        self._setup(entry, client)
        self._members: dict[str, dict] | None = None
        self._sealed: Located | None = None  # this folder is an encrypted folder we can open

    def get_etag(self) -> None:
        return None

    def _listing(self) -> dict[str, dict]:
        """The cloud's entries (cached listing), with the write-back cache's files over them."""
        if self._members is None:
            with dav_errors():
                members = {e["name"]: e for e in self.caches.meta.listing(self.remote)}
                self._sealed = sealed.view_of(self.environ).sealed(self.remote, itself=True)
            if self._sealed is not None:  # the listing holds a folder header: decrypted names instead
                with sealed.sealed_errors(self.environ):
                    self._members = {e["name"]: e for e in sealed.view_of(self.environ).listing(self._sealed)}
                return self._members
            with dav_errors():
                for name in self.caches.files.names_in(self.remote):
                    entry = cached_entry(self.caches, util.join_uri(self.remote, name))
                    if entry is not None:
                        members[name] = members.get(name, {}) | entry
                self._members = members
        return self._members

    def get_member_names(self) -> list[str]:
        return list(self._listing())

    def get_member(self, name: str):
        entry = self._listing().get(name)
        path = util.join_uri(self.path, name)
        if entry is None:
            return self.provider.get_resource_inst(path, self.environ)
        if self._sealed is not None:
            return sealed.resource(path, self.environ, entry, Located(self._sealed.root, name))
        self.environ.setdefault(ENTRIES_KEY, {})[path] = entry
        return _resource(path, self.environ, entry, self.client)

    def create_empty_resource(self, name: str) -> RemoteFile:
        """In the cache only: the PUT's body follows at once and is sent with it."""
        path = util.join_uri(self.path, name)
        where = sealed.write_target(self.environ, path, "PUT")
        if where is not None:  # sealed with its body, nothing written before it
            return sealed.SealedFile(path, self.environ, None, where)
        with self.changing():
            create_empty(self.caches, _remote(path))
        return self.provider.get_resource_inst(path, self.environ)

    def create_collection(self, name: str) -> None:
        """The new folder is learned (known empty), not its parent listed again."""
        remote = _remote(util.join_uri(self.path, name))
        where = sealed.write_target(self.environ, remote, "MKCOL")
        if where is not None:
            with sealed.sealed_errors(self.environ):
                return sealed.view_of(self.environ).mkdir(where)
        with self.changing():
            self.client.mkdir(remote)
        self.caches.meta.learn(remote, {"name": name, "type": "dir", "size": 0, "mtime": time.time()})
        self.caches.meta.empty(remote)

    def _locked_below(self) -> bool:
        manager = self.provider.lock_manager
        return bool(manager and manager.get_url_lock_list(self.get_ref_url(), recursive=True))

    def handle_delete(self) -> bool:
        """The whole tree in one API call, unless something in it is locked (then WsgiDAV walks
        it member by member, checking each lock)."""
        if self._locked_below():
            return False
        self.delete()
        self.provider.prop_manager.remove_tree(self.get_ref_url())
        return True

    def _drop_cached(self) -> None:
        """Forget the cached files below (their folder goes in one API call)."""
        for path in self.caches.files.under(self.remote):
            self.caches.files.drop(path)

    def handle_copy(self, dest_path: str, *, depth_infinity: bool) -> bool:
        """A whole-tree copy in one API call (replacing what is there: Overwrite was checked)."""
        if not depth_infinity or self._locked_below():
            return False
        if sealed.write_target(self.environ, dest_path, "COPY") is not None:
            sealed.copy_or_move(self.environ, self.path, None, dest_path, move=False)  # sealed here
            return True
        with self.changing(self.path, dest_path):
            send_under(self.caches, self.remote)
            for path in self.caches.files.under(_remote(dest_path)):
                self.caches.files.drop(path)
            existing = _stat(self.client, dest_path)
            if existing is not None and existing["type"] == "dir":
                self.client.rmdir(_remote(dest_path), recursive=True)
            elif existing is not None:
                self.client.rm(_remote(dest_path))
            self.client.cp(_remote(self.path), _remote(dest_path))
        manager = self.provider.prop_manager
        manager.remove_tree(self._ref_url(dest_path))
        manager.copy_tree(self.get_ref_url(), self._ref_url(dest_path))
        return True

    def delete(self) -> None:
        if _remote(self.path) == "/":
            raise DAVError(HTTP_FORBIDDEN, "the root cannot be removed")
        with self.changing(self.path):
            self._drop_cached()
            self.client.rmdir(_remote(self.path), recursive=True)
        self.remove_all_properties(recursive=True)
        self.remove_all_locks(recursive=True)

    def copy_move_single(self, dest_path: str, *, is_move: bool) -> None:
        """One level of a member-by-member copy: just the folder itself."""
        where = sealed.write_target(self.environ, dest_path, "MOVE" if is_move else "COPY")
        if where is not None:
            with sealed.sealed_errors(self.environ):
                view = sealed.view_of(self.environ)
                if view.entry(where) is None:
                    view.mkdir(where)
            return
        with self.changing(dest_path):
            try:
                self.client.stat(_remote(dest_path))
            except NotFoundError:
                self.client.mkdir(_remote(dest_path))
        self._dead_properties(dest_path, is_move=is_move, with_children=False)

    def support_recursive_move(self, dest_path: str) -> bool:
        return True

    def move_recursive(self, dest_path: str) -> None:
        if sealed.write_target(self.environ, dest_path, "MOVE") is not None:
            return sealed.copy_or_move(self.environ, self.path, None, dest_path, move=True)  # sealed here
        with self.changing(self.path, dest_path):
            send_under(self.caches, self.remote)
            self.client.mv(self.remote, _remote(dest_path))
            self.caches.files.move(self.remote, _remote(dest_path))
        self._dead_properties(dest_path, is_move=True, with_children=True)


def _resource(path: str, environ: dict, entry: dict, client: HyCloud):
    kind = RemoteFolder if entry.get("type") == "dir" else RemoteFile
    return kind(path, environ, entry, client)


class HyCloudProvider(DAVProvider):
    """Maps the share onto the authenticated user's namespace root."""

    def get_resource_inst(self, path: str, environ: dict):
        """One look-up per path per request (WsgiDAV asks for the same resource several times):
        the write-back cache first, then the metadata cache."""
        client: HyCloud = environ[CLIENT_KEY]
        view = sealed.view_of(environ)
        where = view.sealed(_remote(path))  # inside an encrypted folder known to open: decrypted
        if where is not None:
            return _sealed_resource(path, environ, where)
        entries = environ.setdefault(ENTRIES_KEY, {})
        if path not in entries:
            entries[path] = _lookup(environ[CACHES_KEY], path)
            if entries[path] is None and not _requested(path, environ):
                entries[path] = _recheck(environ[CACHES_KEY], path)
        entry = entries[path]
        if entry is None:  # no stored name: a plaintext name inside an encrypted folder?
            where = view.sealed(_remote(path), ask=True)
            return None if where is None else _sealed_resource(path, environ, where)
        return _resource(path, environ, entry, client)


def _sealed_resource(path: str, environ: dict, where: Located):
    with sealed.sealed_errors(environ):
        entry = sealed.view_of(environ).entry(where)
    return None if entry is None else sealed.resource(path, environ, entry, where)


def _lookup(caches: Caches, path: str) -> dict | None:
    remote = _remote(path)
    entry = cached_entry(caches, remote)
    if entry is not None:
        return entry
    try:
        return caches.meta.entry(remote)
    except HyCloudError as err:
        if err.status == 400:  # a name the API refuses cannot exist there
            return None
        raise DAVError(err.status or 502, err.message) from err


def _requested(path: str, environ: dict) -> bool:
    return path.rstrip("/") == environ.get("PATH_INFO", "").rstrip("/")


def _recheck(caches: Caches, path: str) -> dict | None:
    """A folder the request needs (a PUT's or MKCOL's parent) that the cached listing lacks is
    asked for afresh: another client may have made it since (a 409 must not come from the cache)."""
    entry = _stat(caches.client, path)
    caches.meta.remember(_remote(path), entry)
    return entry


def _stat(client: HyCloud, path: str) -> dict | None:
    try:
        return client.stat(_remote(path))
    except NotFoundError:
        return None
    except HyCloudError as err:
        if err.status == 400:  # a name the API refuses cannot exist there
            return None
        raise DAVError(err.status or 502, err.message) from err
