"""Content hash of large files: sha256 over the sha256 digests of fixed 8 MiB parts.

Defining the address over fixed parts lets the cloud verify an upload without reading it: S3
checks every multipart part against the SHA-256 checksum the client declared for it, and the
controller recomputes this hash from the part checksums S3 reports. Same bytes, same address,
whoever uploads them, which is what makes cross-user dedup work.
"""

from __future__ import annotations

import base64
import hashlib
import os
import re
from collections.abc import Iterable
from concurrent.futures import FIRST_COMPLETED, Executor, Future, ThreadPoolExecutor, wait
from functools import cache
from pathlib import Path
from typing import Any, BinaryIO

from .constants import MiB
from .errors import BadRequestError

PART_SIZE = 8 * MiB
MAX_PARTS = 10_000  # S3's limit: files up to 78 GiB


_HASH = re.compile(r"^[0-9a-f]{64}$")


def checked_hash(content_hash: object) -> str:
    """A content hash as given by a client, or a 400: it becomes a DynamoDB and S3 key."""
    if not isinstance(content_hash, str) or not _HASH.match(content_hash):
        raise BadRequestError("content_hash must be 64 lowercase hex digits", code="bad-content-hash")
    return content_hash


def part_count(size: int) -> int:
    return max(1, -(-size // PART_SIZE))


def part_range(size: int, number: int) -> tuple[int, int]:
    """Byte offset and length of 1-based part `number` in a file of `size` bytes."""
    start = (number - 1) * PART_SIZE
    return start, min(PART_SIZE, size - start)


def hash_from_parts(digests: Iterable[bytes]) -> str:
    return hashlib.sha256(b"".join(digests)).hexdigest()


class PartHasher:
    """Content hash of a stream that arrives in pieces of any size (S3 bodies, relay copies). With
    a `pool`, whole parts that arrive at once are hashed on its threads (hashlib lets go of the GIL
    for them): a rebuilt file's hash takes half the time on two cores."""

    def __init__(self, pool: Executor | None = None) -> None:
        self.pool = pool
        self._digests: list[bytes | Future[bytes]] = []
        self._part = hashlib.sha256()
        self._filled = 0

    def update(self, piece: bytes) -> None:
        view = memoryview(piece)
        while view:
            if self.pool is not None and not self._filled and len(view) >= PART_SIZE:
                self._digests.append(self.pool.submit(_digest, view[:PART_SIZE]))
                view = view[PART_SIZE:]
                continue
            take = min(PART_SIZE - self._filled, len(view))
            self._part.update(view[:take])
            self._filled, view = self._filled + take, view[take:]
            if self._filled == PART_SIZE:
                self._digests.append(self._part.digest())
                self._part, self._filled = hashlib.sha256(), 0

    def digests(self) -> list[bytes]:
        """The part digests so far, the last (partial) part included (waiting for the pool's)."""
        done = [d if isinstance(d, bytes) else d.result() for d in self._digests]
        tail = [self._part.digest()] if self._filled or not done else []
        return done + tail

    def hexdigest(self) -> str:
        return hash_from_parts(self.digests())


def _digest(data: memoryview) -> bytes:
    return hashlib.sha256(data).digest()


def hash_file(path: str | Path) -> tuple[str, list[bytes]]:
    """The content hash of a file and its part digests; a file of several parts has them hashed
    on two threads while the next is read (hashlib lets go of the GIL): half the time on two cores."""
    with open(path, "rb") as f:
        digests = part_digests(f)
    return hash_from_parts(digests), digests


def hash_file_and_sha256(path: str | Path) -> tuple[str, list[bytes], str]:
    """The content hash, its part digests and the plain sha256 (what `sha256sum` prints), read once."""
    whole = hashlib.sha256()
    with open(path, "rb") as f:
        digests = part_digests(f, whole)
    return hash_from_parts(digests), digests, whole.hexdigest()


HASH_THREADS = 2  # parts hashed at once: a client machine's or a 2-vCPU function's cores
IN_FLIGHT = 4  # parts read ahead of their hashes, at most: memory stays about 32 MiB


@cache
def hash_pool() -> ThreadPoolExecutor:
    """The threads that hash whole parts, shared by every hash the process takes."""
    return ThreadPoolExecutor(HASH_THREADS, thread_name_prefix="hycloud-parts")


# a forked child (a mount going to the background) has none of the pool's threads: it makes its own
os.register_at_fork(after_in_child=hash_pool.cache_clear)


def part_digests(src: BinaryIO, whole: Any = None) -> list[bytes]:
    """The 8 MiB part digests, hashed on the shared pool as they are read (at most IN_FLIGHT
    ahead); `whole` (a hashlib object) is fed every byte on the way."""
    pending: list[Future[bytes]] = []
    while True:
        block = src.read(PART_SIZE)
        if whole is not None:
            whole.update(block)
        if not block and pending:
            break
        pending.append(hash_pool().submit(_digest, memoryview(block)))
        if len(block) < PART_SIZE:
            break
        waiting = [f for f in pending[-IN_FLIGHT:] if not f.done()]
        if len(waiting) >= IN_FLIGHT:
            wait(waiting, return_when=FIRST_COMPLETED)
    return [f.result() for f in pending]


def hash_bytes(data: bytes) -> str:
    return hash_from_parts(
        hashlib.sha256(data[i : i + PART_SIZE]).digest() for i in range(0, max(len(data), 1), PART_SIZE)
    )


def b64(digest: bytes) -> str:
    return base64.b64encode(digest).decode()


def object_key(content_hash: str) -> str:
    return f"objects/{content_hash[:2]}/{content_hash}"


def possession_proof(nonce: str, pieces: list[bytes]) -> str:
    """Answer to a dedup challenge (byte ranges chosen by the controller), computed by the client."""
    digest = hashlib.sha256(nonce.encode())
    for piece in pieces:
        digest.update(piece)
    return digest.hexdigest()
