"""`hycloud mount`: a user's HyCloud files as a local folder through FUSE (mfusepy).

The FUSE operations load on first use (PEP 562): the write-back and metadata caches
(`writeback.py`, `meta.py`) serve the WebDAV gateway too, which must not need libfuse.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import exports

if TYPE_CHECKING:
    from .fuse_ops import HyCloudFuse, mount

_LAZY = {"HyCloudFuse": "hycloud.mount.fuse_ops", "mount": "hycloud.mount.fuse_ops"}

__all__ = ["HyCloudFuse", "mount"]


__getattr__, __dir__ = exports(__name__, _LAZY, __all__)
