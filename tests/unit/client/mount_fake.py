"""A real FUSE mount of `HyCloudFuse` over the in-memory `FakeCloud` (no network), run as its own
process, for tests of what the kernel asks of the mount: `python -m tests.unit.client.mount_fake
MOUNTPOINT CACHE_DIR METADATA_TTL`. Its FUSE operations are counted (`hycloud.mount.profile`,
`HYCLOUD_MOUNT_PROFILE`)."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import mfusepy as fuse
import pytest

from hycloud.caches.writeback import WriteBack
from hycloud.mount import fuse_ops, profile
from tests.unit.client.test_mount_writeback import FakeCloud

NEEDS_FUSE = pytest.mark.skipif(
    not (os.path.exists("/dev/fuse") and shutil.which("fusermount3")),
    reason="no /dev/fuse or fusermount3 here: FUSE mounts are impossible on this machine",
)


def main(mountpoint: str, cache_dir: str, ttl: float) -> None:
    cloud = FakeCloud()
    cloud.dirs.add("/d")
    cloud.files["/d/stored"] = b"stored bytes"
    ops = fuse_ops.HyCloudFuse(cloud, cache_dir=cache_dir, metadata_ttl=ttl)  # type: ignore[arg-type]
    ops.cache.stop()
    ops.cache = WriteBack(cloud.upload, Path(cache_dir) / "cache", delay=0.05, ttl=ttl)
    ops.cache.on_flushed, ops.cache.still_valid = ops._flushed, ops._still_valid
    ops.cache.make_dir = lambda path: cloud.mkdir(path, parents=True)
    ops.cache.dirs_made = lambda paths: ops.meta.learn_dirs(paths)
    profile.from_env(ops, fuse_ops.OPS)
    fuse.FUSE(ops, mountpoint, foreground=True, auto_unmount=True, **fuse_ops._fuse_options(ttl))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], float(sys.argv[3]))
