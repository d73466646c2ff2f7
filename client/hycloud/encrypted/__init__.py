"""Encrypted folders on the client (docs/ENCRYPTION.md): the cloud stores ciphertext only.

`EncryptedFolder.create/open` over a `CloudStore` (the SDK) or any `Store`; formats come from
hycloud_core.crypto. A lost passphrase or key file cannot be recovered by anyone.
"""

from .folder import EncryptedFolder
from .store import CloudStore, MemoryStore, Store

__all__ = ["CloudStore", "EncryptedFolder", "MemoryStore", "Store"]
