"""What a Merkle tree is built from: live files, directories and deletion marks."""

from __future__ import annotations

from dataclasses import dataclass

from hycloud_core.content import hash_bytes


@dataclass(frozen=True, slots=True)
class FileEntry:
    """A live file.

    `content_hash` is the content hash of content.py (sha256 over the sha256 of
    each 8 MiB part), the digest a link file records for a large file and the
    version of a small file, so an instance can hash an S3-backed file without
    reading it. `blocks` are the hashes of its erasure-coded blocks in order
    (chunk-major, then block index), empty for a file stored whole.
    """

    content_hash: bytes
    mtime: float
    blocks: tuple[bytes, ...] = ()

    @classmethod
    def of(cls, content: bytes, mtime: float, blocks: tuple[bytes, ...] = ()) -> FileEntry:
        return cls(bytes.fromhex(hash_bytes(content)), mtime, tuple(blocks))


@dataclass(frozen=True, slots=True)
class DirEntry:
    """A directory that must exist even when empty (parents of other entries exist implicitly)."""

    mtime: float = 0.0


@dataclass(frozen=True, slots=True)
class Tombstone:
    """A deletion mark: the path was deleted at `deleted_at`.

    Kept so that "deleted here" is not mistaken for "not yet copied here". A
    tombstone implies its parent directory exists; a live entry at the same
    path supersedes it (the path was re-created).
    """

    deleted_at: float


Entry = FileEntry | DirEntry | Tombstone


def normalise_path(path: str) -> str:
    """Absolute POSIX form within the user's namespace: "/", "/a", "/a/b"."""
    parts = [p for p in path.split("/") if p not in ("", ".")]
    if ".." in parts or any("\x00" in p for p in parts):
        raise ValueError(f"bad path {path!r}")
    return "/" + "/".join(parts)


def parent_of(path: str) -> str:
    return path.rsplit("/", 1)[0] or "/"


def depth_of(path: str) -> int:
    return 0 if path == "/" else path.count("/")
