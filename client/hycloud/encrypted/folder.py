"""An open encrypted folder: its keys, where each plaintext path is stored, its name maps.

Stored layout (relative to the folder's root on the cloud):

    .hcenc                        the header (key slots, parameters), plain JSON + HMAC
    .hcchunks/<sha256>            chunk objects, one flat folder (one listing tells what is there)
    .hcdir                        the root's name map (sealed manifest)
    <enc name>                    a file's manifest (its chunk list), sealed
    <enc name>/.hcdir             a subfolder's name map, and so on down
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from hycloud_core.crypto import header as hdr
from hycloud_core.crypto import manifest, names
from hycloud_core.crypto.errors import RollbackError
from hycloud_core.crypto.keys import FolderKeys, KdfParams
from hycloud_core.errors import ConflictError, NotFoundError

from .counters import Counters
from .store import Store, version_of

HEADER_KEY = hdr.NAME  # the header's epoch, in the counters
REMOVED = "R:"  # + a folder's path: its map's counter when this client removed the folder


@dataclass
class EncryptedFolder:
    store: Store
    header: hdr.Header
    keys: FolderKeys
    counters: Counters
    versions: dict[str, str] = field(default_factory=dict)  # stored path -> version last read or written

    # --- opening ------------------------------------------------------------------------------
    @classmethod
    def create(
        cls,
        store: Store,
        label: str,
        secret: bytes,
        params: KdfParams | None = None,
        counters: Counters | None = None,
    ) -> EncryptedFolder:
        """A new encrypted folder at the store's root (which must not be one already)."""
        if store.read_many([hdr.NAME])[hdr.NAME] is not None:
            raise ConflictError("this folder is already encrypted", code="already-exists")
        header, folder_key = hdr.create(label, secret, params)
        store.write_many({hdr.NAME: header.to_bytes()})
        folder = cls(store, header, FolderKeys.derive(header.folder_id, folder_key), counters or Counters())
        path, counter, blob = folder.sealed_map("", manifest.DirMap(), 0)
        store.write_many({path: blob})
        folder.versions[path] = version_of(blob)
        folder.counters.note(folder.keys.folder_id, {"D:": counter})
        return folder

    @classmethod
    def open(
        cls, store: Store, label: str, secret: bytes, counters: Counters | None = None
    ) -> EncryptedFolder:
        """The folder opened with `secret` (WrongKeyError if it opens no slot); `label`'s slot is
        tried first, then the others ("" tries them all in turn)."""
        blob = store.read_many([hdr.NAME])[hdr.NAME]
        if blob is None:
            raise NotFoundError("not an encrypted folder (no .hcenc)", code="not-encrypted")
        header = hdr.parse(blob)
        folder_key = hdr.open_key(header, label, secret)
        counters = counters or Counters()
        if header.epoch < counters.seen(header.folder_id, HEADER_KEY):
            raise RollbackError("the folder header is older than one this client has seen")
        counters.note(header.folder_id, {HEADER_KEY: header.epoch})
        return cls(store, header, FolderKeys.derive(header.folder_id, folder_key), counters)

    # --- paths --------------------------------------------------------------------------------
    def stored(self, rel: str) -> str:
        """Where plaintext path `rel` (relative to the folder, "" for the root) is stored."""
        return "/".join(names.encrypt(self.keys, part) for part in split(rel))

    def map_path(self, dir_rel: str) -> str:
        return posixpath.join(self.stored(dir_rel), manifest.DIR_MAP)

    # --- name maps ----------------------------------------------------------------------------
    def read_maps(self, dir_rels: Iterable[str]) -> dict[str, tuple[manifest.DirMap, int]]:
        """Each folder's name map and counter; a folder never written has an empty map (0), but a
        map this client has seen may not vanish (that is a rollback too)."""
        wanted = {self.map_path(rel): rel for rel in dict.fromkeys(dir_rels)}
        found, maps, seen = self.store.read_many(wanted), {}, {}
        for stored, rel in wanted.items():
            key = "D:" + rel
            blob = found[stored]
            self.versions[stored] = version_of(blob)
            if blob is None:
                if self.counters.seen(self.keys.folder_id, key) > self.counters.seen(
                    self.keys.folder_id, REMOVED + rel
                ):
                    raise RollbackError(f"the name map of {rel or '/'} is gone, after this client saw it")
                maps[rel] = (manifest.DirMap(), 0)
                continue
            opened = manifest.open_(
                self.keys, manifest.FOLDER, rel, blob, self.counters.seen(self.keys.folder_id, key)
            )
            maps[rel], seen[key] = (manifest.DirMap.from_json(opened.body), opened.counter), opened.counter
        self.counters.note(self.keys.folder_id, seen)
        return maps

    def forget_maps(self, rel: str) -> None:
        """Folder `rel` and those below were removed here: their maps may be absent from now on
        (a folder made again at the path gets a map past the counters seen)."""
        mine = self.counters.data.get(self.keys.folder_id.hex(), {})
        prefix = "D:" + rel + "/"
        gone = {k: v for k, v in mine.items() if k == "D:" + rel or k.startswith(prefix)}
        self.counters.note(self.keys.folder_id, {REMOVED + k[2:]: v for k, v in gone.items()})

    def sealed_map(self, rel: str, dir_map: manifest.DirMap, counter: int) -> tuple[str, int, bytes]:
        """A folder's name map sealed one version past `counter` and past what this client saw:
        where it is stored, its new counter, its bytes."""
        new = max(counter, self.counters.seen(self.keys.folder_id, "D:" + rel)) + 1
        return self.map_path(rel), new, manifest.seal(self.keys, manifest.FOLDER, rel, new, dir_map.to_json())

    def ls(self, rel: str = "") -> list[dict[str, Any]]:
        """A folder's entries with their plaintext names, from its authenticated name map."""
        ((dir_map, _),) = self.read_maps([rel]).values()
        if rel and not dir_map.entries and not self._is_dir(rel):
            raise NotFoundError(f"{rel} is not a folder of this encrypted folder")
        return [
            {"name": name, "type": e["t"], **{k: e[k] for k in ("size", "sha256", "mtime") if k in e}}
            for name, e in sorted(dir_map.entries.items())
        ]

    def entry(self, rel: str) -> dict[str, Any] | None:
        """What the parent's name map says of `rel` (None: not there); the root is a folder."""
        if not rel:
            return {"t": "dir"}
        parent, name = posixpath.split(rel)
        ((dir_map, _),) = self.read_maps([parent]).values()
        return dir_map.entries.get(name)

    def _is_dir(self, rel: str) -> bool:
        found = self.entry(rel)
        return found is not None and found["t"] == "dir"

    # --- keys ---------------------------------------------------------------------------------
    def rotate(
        self, label: str, old_secret: bytes, new_secret: bytes, params: KdfParams | None = None
    ) -> int:
        """Re-seal the folder key for `label` under a new secret; returns the new epoch. Content,
        names and manifests stay as they are (the folder key does not change)."""
        folder_key = hdr.open_key(self.header, label, old_secret)
        self.header = hdr.rewrap(self.header, folder_key, label, new_secret, params)
        self.store.write_many({hdr.NAME: self.header.to_bytes()})
        self.counters.note(self.keys.folder_id, {HEADER_KEY: self.header.epoch})
        return self.header.epoch

    def add_user(
        self, label: str, my_secret: bytes, their_secret: bytes, params: KdfParams | None = None
    ) -> int:
        """A key slot for user `label`, sealed under their secret (the folder key opened with this
        user's); returns the new epoch. The header is written only over the version read, so a
        slot another writer added meanwhile is not lost (a conflict instead)."""
        folder_key = hdr.open_key(self.header, "", my_secret)
        header = hdr.add_slot(self.header, folder_key, label, their_secret, params)
        read = self.store.read_many([hdr.NAME])[hdr.NAME]
        if read is None or hdr.parse(read) != self.header:
            raise ConflictError(
                "the folder's header changed since it was opened; run again", code="version-mismatch"
            )
        if self.store.write_many({hdr.NAME: header.to_bytes()}, {hdr.NAME: version_of(read)}):
            raise ConflictError("the folder's header changed meanwhile; run again", code="version-mismatch")
        self.header = header
        self.counters.note(self.keys.folder_id, {HEADER_KEY: header.epoch})
        return header.epoch


def split(rel: str) -> list[str]:
    return [part for part in rel.strip("/").split("/") if part]


def ancestors(rel: str) -> list[str]:
    """Every folder above `rel`, root first: "a/b/c" -> ["", "a", "a/b"]."""
    parts = split(rel)
    return ["/".join(parts[:i]) for i in range(len(parts))]
