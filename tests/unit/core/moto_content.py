"""Content for the tests of a FileSystem over moto (`moto_filesystems`): large content stored at
its address as a delta upload leaves it, then linked, and looked up there; small files; a sample
tree."""

from __future__ import annotations

import hashlib

from hycloud_core import content
from hycloud_core.fs import FileSystem
from tests.conftest import MOTO_BUCKET


def put_large(fs: FileSystem, path: str, data: bytes) -> str:
    """Store `data` at its content address and link `path` to it; its content hash."""
    h = content.hash_bytes(data)
    fs.s3.put_object(Bucket=MOTO_BUCKET, Key=content.object_key(h), Body=data)
    fs.commit_stored(path, h, len(data), sha256=hashlib.sha256(data).hexdigest())
    return h


def stored(fs: FileSystem, h: str) -> bool:
    """Whether the content `h` is still in the bucket."""
    return fs.s3.list_objects_v2(Bucket=MOTO_BUCKET, Prefix=content.object_key(h)).get("KeyCount", 0) == 1


def put_small(fs: FileSystem, path: str, data: bytes) -> None:
    fs.put_small(path, data, hashlib.sha256(data).hexdigest(), parents=True)


def sample_tree(fs: FileSystem) -> str:
    """/p with two small files, an empty folder and a large file; the large file's content hash."""
    put_small(fs, "/p/a.txt", b"alpha")
    put_small(fs, "/p/sub/b.txt", b"beta")
    fs.mkdir("/p/empty")
    return put_large(fs, "/p/sub/big.bin", b"L" * 5000)
