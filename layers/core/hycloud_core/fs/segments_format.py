"""The formats of packed small files (docs/SEGMENTS.md): segment objects in S3 and the stubs on EFS.

A segment is one S3 object holding many cold small files of one user back to back, then an index
of them (JSON) and a fixed trailer (magic, index length), so the object describes itself: a reader
with a stub needs only the member's range, a repair can list what a segment holds from the object
alone.

A stub stands at a packed file's path on EFS, as a link file stands at a large file's: marked by
the sticky bit (so listings and the collector's walk treat it as they treat link files) and told
apart from a link file by its magic. It names the segment and the member's range and carries the
file's size, hashes and permission bits; the stub file's own modification time is the file's.
"""

from __future__ import annotations

import hashlib
import json
import secrets
import struct
import time
from dataclasses import asdict, dataclass
from typing import Any

from .. import content

STUB_MAGIC = "hycloud-segment-stub"
STUB_VERSION = 1
TRAILER_MAGIC = b"HCSEG001"
TRAILER = struct.Struct(">8sQ")  # magic, index length in bytes
PREFIX = "segments/"


@dataclass(frozen=True)
class Stub:
    segment: str  # segment id
    key: str  # the segment's S3 key
    offset: int
    length: int
    content_hash: str
    sha256: str
    mode: int = 0o640  # the file's permission bits

    @property
    def size(self) -> int:
        return self.length

    def to_bytes(self) -> bytes:
        return json.dumps(
            {"magic": STUB_MAGIC, "version": STUB_VERSION, **asdict(self)}, sort_keys=True
        ).encode()

    def range_header(self) -> str:
        return f"bytes={self.offset}-{self.offset + self.length - 1}"


def stub_from_bytes(raw: bytes) -> Stub | None:
    """The stub these bytes hold; None for anything else (a link file, user data)."""
    if not raw.startswith(b"{") or STUB_MAGIC.encode() not in raw:
        return None
    try:
        doc = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(doc, dict) or doc.get("magic") != STUB_MAGIC or doc.get("version") != STUB_VERSION:
        return None
    known = set(Stub.__dataclass_fields__)
    return Stub(**{k: v for k, v in doc.items() if k in known})


def new_segment_id(now: float | None = None) -> str:
    """Sortable by creation time, unique without coordination."""
    return f"{int((time.time() if now is None else now) * 1000):013d}-{secrets.token_hex(6)}"


def segment_key(user: str, segment_id: str) -> str:
    return f"{PREFIX}{user}/{segment_id}"


@dataclass(frozen=True)
class Member:
    """One file's bytes in a segment; `path` is where it was when packed (for repair and reading)."""

    path: str
    offset: int
    length: int
    content_hash: str
    sha256: str


def member_of(path: str, offset: int, data: bytes) -> Member:
    return Member(path, offset, len(data), content.hash_bytes(data), hashlib.sha256(data).hexdigest())


def build_segment(files: list[tuple[str, bytes]]) -> tuple[bytes, list[Member]]:
    """The object of these (path, bytes) files, members in order, then index and trailer."""
    members: list[Member] = []
    offset = 0
    for path, data in files:
        members.append(member_of(path, offset, data))
        offset += len(data)
    index = json.dumps({"members": [asdict(m) for m in members]}, separators=(",", ":")).encode()
    body = b"".join(data for _path, data in files) + index + TRAILER.pack(TRAILER_MAGIC, len(index))
    return body, members


def read_index(segment: bytes) -> list[Member]:
    """The members a whole segment object lists (ValueError when it is not a segment)."""
    if len(segment) < TRAILER.size:
        raise ValueError("not a segment: too short")
    magic, length = TRAILER.unpack(segment[-TRAILER.size :])
    if magic != TRAILER_MAGIC or length > len(segment) - TRAILER.size:
        raise ValueError("not a segment: bad trailer")
    doc: dict[str, Any] = json.loads(segment[-TRAILER.size - length : -TRAILER.size])
    return [Member(**m) for m in doc["members"]]


def check_member(stub: Stub, data: bytes) -> bytes:
    """The member's bytes, if they are what the stub says (ValueError otherwise)."""
    if len(data) != stub.length or hashlib.sha256(data).hexdigest() != stub.sha256:
        raise ValueError(f"segment {stub.segment} at {stub.offset}: bytes do not match the stub")
    return data
