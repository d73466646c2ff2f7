"""Refusals for the ways in that are not routed through the encrypted engine (`touch`, a tree put
or sync aimed above an encrypted folder; an encrypted folder moved into another; the mount and
WebDAV without the folder's key): each would store plaintext, or plaintext names, inside an
encrypted folder, so it stops before sending anything with `EncryptedFolderError` (exit 2 in the
CLI, like the other refusals of encrypted folders; 403 over WebDAV; EACCES in the mount).
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable
from typing import TYPE_CHECKING

from hycloud_core import paths
from hycloud_core.crypto import header as hdr
from hycloud_core.errors import HyCloudError

from .roots import KnownRoots

if TYPE_CHECKING:
    from ..sdk.client import HyCloud

HINT = "use hycloud put/get/sync on a path inside it, the hycloud:// filesystem, or hycloud crypt"


class EncryptedFolderError(HyCloudError):
    def __init__(self, root: str, what: str) -> None:
        super().__init__(
            f"{root} is an encrypted folder: {what} would store plaintext in it; {HINT}",
            code="encrypted-folder",
            status=400,
        )
        self.root = root


def refuse_into(client: HyCloud, targets: Iterable[str], what: str, roots: KnownRoots | None = None) -> None:
    """Refuse when any of `targets` (cloud paths a plain write makes) is inside an encrypted
    folder; one bundle request asks about every folder above them."""
    roots = roots or KnownRoots(client)
    wanted = [paths.normalize(t) for t in targets]
    roots.ask(wanted)
    for target in wanted:
        where = roots.locate(target, itself=False)
        if where is not None:
            raise EncryptedFolderError(where.root, what)


def encrypted_among(root: str, rels: Iterable[str]) -> list[str]:
    """Encrypted folders below cloud folder `root`, found by their header among the relative
    paths of its files a listing or Merkle exchange returned."""
    found = []
    for rel in rels:
        if posixpath.basename(rel) == hdr.NAME:
            folder = posixpath.dirname(rel)
            found.append(paths.normalize(posixpath.join(root, folder)) if folder else paths.normalize(root))
    return sorted(found)


def refuse_tree(root: str, rels: Iterable[str], local_files: Iterable[str], what: str) -> None:
    """A tree written at `root` (its files' relative paths `local_files`) whose exchange met the
    header of an encrypted folder the tree reaches into: refused. One it does not reach is
    left alone."""
    found = encrypted_among(root, rels)
    if not found:
        return
    base = paths.normalize(root)
    for folder in found:
        rel = folder[len(base) :].strip("/") if base != "/" else folder.strip("/")
        prefix = rel + "/" if rel else ""
        if any(f.startswith(prefix) for f in local_files):
            raise EncryptedFolderError(folder, what + " (aim it at the encrypted folder itself)")
