"""`hycloud cp` and `hycloud mv` where either end is inside an encrypted folder.

- Both ends in the same encrypted folder: moves.copy/move, which reuse every chunk and write only
  manifests sealed for the new paths and the changed name maps.
- Across two folder keys (another encrypted folder, or plain storage, either way): nothing can
  be reused, so the files go through this machine as `get` then `put` would take them: decrypted
  (every object checked) or downloaded into a private temporary folder, then sealed under the
  destination's key or uploaded plain; a move then removes the source. This is what `put`/`get`
  and the hycloud:// filesystem do at the same boundary.
- A whole encrypted folder copied or moved to a plain place stays a plain copy of its ciphertext
  and header (the caller's plain path). Into another encrypted folder it is refused: an encrypted
  folder is never nested in another.

Which ends are encrypted is asked in one bundle request for both paths and all their folders.
"""

from __future__ import annotations

import posixpath
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hycloud_core import paths
from hycloud_core.errors import NotFoundError

from . import download, files, moves, routing, upload
from .folder import EncryptedFolder, split
from .guard import EncryptedFolderError
from .routing import Located

if TYPE_CHECKING:
    from ..sdk.client import HyCloud

Opener = Callable[[Located], EncryptedFolder]


@dataclass(frozen=True)
class Ends:
    src: Located | None
    dst: Located | None

    @property
    def plain(self) -> bool:
        """Neither end is inside an encrypted folder (a whole one as the source included): the
        plain cp/mv does it, on ciphertext where there is any."""
        return self.dst is None and (self.src is None or not self.src.inner)


def locate_both(client: HyCloud, src: str, dst: str) -> Ends:
    """The encrypted folders `src` and `dst` are in (or are), from one request."""
    src_roots, dst_roots = routing.candidates(src), routing.candidates(dst)
    found = routing.headers_at(client, sorted(set(src_roots) | set(dst_roots)))
    return Ends(_nearest(src, src_roots, found), _nearest(dst, dst_roots, found))


def _nearest(path: str, roots: list[str], found: set[str]) -> Located | None:
    for root in roots:  # deepest first
        if root in found:
            return Located(root, "/".join(split(paths.normalize(path))[len(split(root)) :]))
    return None


def basename(path: str) -> str:
    return path.rstrip("/").rsplit("/", 1)[-1]


def copy_or_move(
    client: HyCloud, src: str, dst: str, ends: Ends, move: bool, opener: Opener, into: bool = True
) -> dict[str, Any]:
    """Do it (ends not `plain`); what was done, for the CLI's output. With `into` (cp and mv) a
    `dst` that is a folder receives the source under its name; without (WebDAV's Destination),
    `dst` is the new path itself."""
    if ends.src is not None and not ends.src.inner:
        assert ends.dst is not None
        raise EncryptedFolderError(ends.dst.root, "putting a whole encrypted folder inside another")
    for where in (ends.src, ends.dst):
        if where is not None:
            opener(where)  # no key, no transfer: before anything is read or sent
    name = basename(src)
    if ends.src is not None and ends.dst is not None and ends.src.root == ends.dst.root:
        folder = opener(ends.src)
        rel = routing.target_of(folder, ends.dst, name, dst.endswith("/")) if into else ends.dst.inner
        done = (moves.move if move else moves.copy)(folder, ends.src.inner, rel)
        return {"path": posixpath.join(ends.dst.root, rel), "encrypted": True, "reused": True, **vars(done)}
    with tempfile.TemporaryDirectory(prefix="hycloud-enc-") as tmp:
        local = Path(tmp) / name
        is_dir = _fetch(client, src, ends.src, local, opener)
        path = _send(client, dst, ends.dst, local, is_dir, opener, into)
        if move:
            _remove(client, src, ends.src, is_dir, opener)
    return {"path": path, "encrypted": True, "reused": False, "folder": is_dir}


def _fetch(client: HyCloud, src: str, where: Located | None, local: Path, opener: Opener) -> bool:
    """The source into `local` (decrypted when it is in an encrypted folder); whether a folder."""
    if where is None:
        if client.stat(src)["type"] == "dir":
            client.download_tree(src, local)
            return True
        client.get(src, local)
        return False
    folder = opener(where)
    entry = files.entry_or_missing(folder, where.inner)
    download.get(folder, where.inner, local)
    if entry["t"] == "dir":
        local.mkdir(parents=True, exist_ok=True)  # an empty folder too
        return True
    return False


def _send(
    client: HyCloud, dst: str, where: Located | None, local: Path, is_dir: bool, opener: Opener, into: bool
) -> str:
    """`local` to where `dst` says (into it when it is a folder); the cloud path it landed at."""
    if where is None:
        target = _plain_target(client, local.name, dst) if into else dst
        (client.upload_tree if is_dir else client.put)(local, target)
        return target
    folder = opener(where)
    rel = routing.target_of(folder, where, local.name, dst.endswith("/")) if into else where.inner
    if is_dir:
        routing.put_tree(folder, Located(where.root, rel), local)
    else:
        upload.put_file(folder, local, rel)
    return posixpath.join(where.root, rel)


def _plain_target(client: HyCloud, name: str, dst: str) -> str:
    """Into `dst` when it ends in / or is a folder, else `dst` itself (as cli.targets.remote)."""
    if dst.endswith("/"):
        return posixpath.join(dst, name)
    try:
        is_dir = client.stat(dst)["type"] == "dir"
    except NotFoundError:
        return dst
    return posixpath.join(dst, name) if is_dir else dst


def _remove(client: HyCloud, src: str, where: Located | None, is_dir: bool, opener: Opener) -> None:
    if where is not None:
        files.remove(opener(where), where.inner, recursive=True)
    elif is_dir:
        client.rmdir(src, recursive=True)
    else:
        client.rm(src)


def folder_opener(client: HyCloud) -> Opener:
    """Each encrypted folder opened once (the key derivation is slow on purpose)."""
    opened: dict[str, EncryptedFolder] = {}

    def open_(where: Located) -> EncryptedFolder:
        if where.root not in opened:
            opened[where.root] = routing.open_folder(client, where)
        return opened[where.root]

    return open_
