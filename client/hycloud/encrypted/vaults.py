"""The encrypted folders one long-lived client object (an fsspec filesystem, a mount, a WebDAV
server) meets: which folders are encrypted (roots.KnownRoots, kept for the object's life), each
folder opened once with the user's secret, and the refusals as the OSError callers expect.

A folder without a key to open it is `PermissionError` naming the folder, never ciphertext
handed back as if it were the file, and never plaintext stored beside the ciphertext.
"""

from __future__ import annotations

import errno
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from hycloud_core.crypto.errors import KeyUnavailableError, WrongKeyError

from . import routing
from .counters import Counters, default_path
from .folder import EncryptedFolder
from .passphrase import read_secret
from .roots import KnownRoots
from .store import CloudStore

if TYPE_CHECKING:
    from ..sdk.client import HyCloud


class EncryptedPathError(PermissionError):
    """A path inside an encrypted folder that this way in cannot write (or read) as plaintext."""

    def __init__(self, path: str, root: str, why: str) -> None:
        super().__init__(errno.EACCES, f"{root} is an encrypted folder: {why}", path)
        self.root = root
        self.code, self.status = "encrypted-folder", 403


class Vaults:
    def __init__(
        self, client: HyCloud, passphrase: str | bytes | None = None, key_file: str | Path | None = None
    ) -> None:
        self.client = client
        self.roots = KnownRoots(client)
        self._secret = passphrase.encode() if isinstance(passphrase, str) else passphrase
        self._key_file = Path(key_file) if key_file else None
        self._opened: dict[str, EncryptedFolder] = {}
        self._lock = threading.Lock()

    def locate(self, path: str, itself: bool = True) -> routing.Located | None:
        return self.roots.locate(path, itself)

    def folder(self, where: routing.Located, path: str) -> EncryptedFolder:
        """The folder opened (once: the key derivation is slow on purpose); PermissionError naming
        the folder when no secret is to be had or it opens no key slot."""
        with self._lock:
            if where.root in self._opened:
                return self._opened[where.root]
            try:
                secret = self._secret or read_secret(self._key_file, what=where.root)
                opened = EncryptedFolder.open(
                    CloudStore(self.client, where.root), "", secret, Counters(default_path())
                )
            except KeyUnavailableError as err:
                raise EncryptedPathError(path, where.root, err.message) from err
            except WrongKeyError as err:
                raise EncryptedPathError(path, where.root, "the key given does not open it") from err
            self._opened[where.root] = opened
            return opened

    def refuse_inside(self, path: str, what: str, itself: bool = False) -> None:
        """Raise EncryptedPathError when `path` is inside an encrypted folder: `what` (a plain
        write) would store plaintext there."""
        where = self.locate(path, itself)
        if where is not None:
            raise EncryptedPathError(
                path, where.root, f"{what} would store plaintext in it; use hycloud put/get or crypt"
            )
