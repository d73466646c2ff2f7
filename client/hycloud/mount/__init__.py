"""`hycloud mount`: a user's HyCloud files as a local folder through FUSE (mfusepy).

The FUSE operations (and libfuse) load on first use (PEP 562): `hycloud mount --help` and the
checks of its options need neither. Its caches are `hycloud.caches`, shared with WebDAV.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import exports

if TYPE_CHECKING:
    from .fuse_ops import HyCloudFuse, mount

_LAZY = {"HyCloudFuse": "hycloud.mount.fuse_ops", "mount": "hycloud.mount.fuse_ops"}

__all__ = ["HyCloudFuse", "mount"]


__getattr__, __dir__ = exports(__name__, _LAZY, __all__)
