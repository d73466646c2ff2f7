"""The bytes of a user's earlier small-file versions, kept by content hash in a versions area on EFS.

Why EFS and not the user's S3 prefix: a namespace file is never changed in place (every write is
a new file renamed over the old one), so the old version can be kept by a *hard link* to it made
just before the overwrite or delete: one metadata operation on the volume the request already
works on, no byte copied, no extra S3 PUT (and its latency and request fee) on every small
overwrite, and no new bucket permission for the controller. The bytes stay where they were
written and follow EFS's storage tiers like any file unread for 30 days (Infrequent Access,
then Archive), so a kept version costs what an unread small file does. Keyed by content hash,
versions with the same bytes share one file.

The area is `<efs root>/versions/<user>/<hash[:2]>/<hash>`, outside the namespace, so listings,
the Merkle walk, the reconciler and the collector's link walk never see it.

Keeping and purging race safely without a lock. `keep` links the old file under a temporary
name and renames it over `<hash>`: the rename gives the copy a fresh change time (ctime) even
when one was there. `purge` removes a copy only if no record names it and its ctime is older
than the grace period, and does it by renaming the copy aside, checking it is still the inode
it judged and that no other name links it (a `keep` in flight holds a second link), and only
then unlinking it (or renaming it back). A `keep` that lands in between either leaves a newer
or still linked inode, which is put back, or finds no copy and makes one.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
from collections.abc import Iterator

from .. import content
from ..errors import NotFoundError

TMP_PREFIX = ".hc-tmp-"


def versions_root(namespaces_dir: str) -> str:
    """The versions area beside the namespaces (`<efs root>/ns` -> `<efs root>/versions`)."""
    return os.path.join(os.path.dirname(os.path.normpath(namespaces_dir)), "versions")


class VersionCopies:
    """One user's kept small-file bytes."""

    def __init__(self, namespaces_dir: str, user: str) -> None:
        self.root = os.path.join(versions_root(namespaces_dir), user)

    def path(self, content_hash: str) -> str:
        content.checked_hash(content_hash)
        return os.path.join(self.root, content_hash[:2], content_hash)

    def keep(self, host: str, content_hash: str) -> None:
        """Keep the file at `host` (a namespace file about to be replaced) as `content_hash`."""
        target = self.path(content_hash)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        tmp = os.path.join(os.path.dirname(target), f"{TMP_PREFIX}{secrets.token_hex(8)}")
        try:
            os.link(host, tmp)
        except OSError:  # a volume without hard links: copy the bytes instead
            shutil.copyfile(host, tmp)
        os.replace(tmp, target)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)  # left when `target` already was this very file (rename does nothing then)

    def keep_bytes(self, data: bytes, content_hash: str) -> None:
        """Keep `data` as `content_hash` (a packed file, whose namespace file is only its stub)."""
        target = self.path(content_hash)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        tmp = os.path.join(os.path.dirname(target), f"{TMP_PREFIX}{secrets.token_hex(8)}")
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, target)

    def read(self, content_hash: str) -> bytes:
        """The kept bytes, checked against their hash; 404 when they are gone."""
        try:
            with open(self.path(content_hash), "rb") as f:
                data = f.read()
        except FileNotFoundError:
            raise NotFoundError("this version's content is no longer kept", code="content-gone") from None
        if content.hash_bytes(data) != content_hash:
            raise NotFoundError("this version's content is damaged", code="content-gone")
        return data

    def hashes(self) -> Iterator[tuple[str, str]]:
        """(content hash, host path) of every copy, temporary files included under their own name."""
        if not os.path.isdir(self.root):
            return
        for top, _dirs, files in os.walk(self.root):
            for name in files:
                yield name, os.path.join(top, name)

    def purge(self, keep: set[str], cutoff: float) -> list[str]:
        """Remove copies no hash in `keep` names whose ctime is before `cutoff`; the hashes removed."""
        removed = []
        for name, host in list(self.hashes()):
            if name in keep:
                continue
            try:
                st = os.lstat(host)
            except FileNotFoundError:
                continue
            if st.st_ctime < cutoff and _remove_if_same(host, st.st_ino):
                removed.append(name)
        return removed

    def remove_all(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


def _remove_if_same(host: str, inode: int) -> bool:
    """Unlink `host` if it is still the inode judged and no other name links it (a namespace file
    or a `keep` in flight); a copy `keep` put there meanwhile stays."""
    aside = os.path.join(os.path.dirname(host), f"{TMP_PREFIX}purge-{secrets.token_hex(8)}")
    try:
        os.rename(host, aside)
    except FileNotFoundError:
        return False
    st = os.lstat(aside)
    if st.st_ino == inode and st.st_nlink == 1:
        os.unlink(aside)
        return True
    with contextlib.suppress(OSError):
        os.rename(aside, host)  # a keep in between: put it back (same bytes if one is there again)
    return False
