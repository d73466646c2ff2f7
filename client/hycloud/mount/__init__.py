"""`hycloud mount`: a user's HyCloud files as a local folder through FUSE (mfusepy)."""

from .fuse_ops import HyCloudFuse, mount

__all__ = ["HyCloudFuse", "mount"]
