"""Bundles: many small files in one request or answer (seed 000 §III-B, small-file bundling).

One round trip per file is what makes a tree of small files slow on a long link; a bundle carries
many of them, each with its own path, size, sha256, modification time and mode, so the cloud can
commit and acknowledge every file on its own. Layout, zstd-compressed as one frame (its content
size in the frame header, so a bomb is refused before it is inflated)::

    b"HCB1" | manifest length (u32, big-endian) | manifest (UTF-8 JSON) | the files' bytes, in order

The manifest is `{"files": [{"path", "size", "sha256", "mtime", "mode", "expect"}, ...], "others": [...]}`:
`files` are the members whose bytes follow; `others` are plain entries without bytes (a download's
large files, answered by reference, and the paths it could not serve). Members are checked here
for shape only; whether a member's path, hash or size is acceptable is decided one member at a
time by whoever commits it (`check_member`), so one bad member never sinks the rest. A member's
optional `expect` is the version its path must hold for it to commit (a content hash, or `absent`),
as `If-Match`/`If-None-Match: *` are for a single upload: what lets a sync never overwrite a
version it has not seen.
"""

from __future__ import annotations

import hashlib
import json
import math
import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeGuard

import zstandard

from . import paths
from .constants import MiB
from .errors import BadRequestError, HyCloudError, PayloadTooLargeError

MAGIC = b"HCB1"
HEADER = struct.Struct(">4sI")
# A bundle's compressed body must fit one API request or answer: Lambda takes 6 MB, base64-encoded.
MAX_BODY = 4 * MiB
MAX_RAW = 32 * MiB  # inflated, manifest included: bounds the memory one bundle may take
MAX_STAGED = MAX_RAW  # a bundle staged in S3 (too large for a request): compressed, at most this
MAX_MEMBERS = 1000
MAX_MANIFEST = 1 * MiB
ABSENT = "absent"  # a member's `expect`: its path must not exist
LEVEL = 3  # zstd's default: several hundred MB/s, source code to about a quarter


@dataclass(frozen=True)
class Member:
    """One file of a bundle; `mtime` and `mode` are None when not kept, `expect` when any version
    at the path may be replaced."""

    path: str
    size: int
    sha256: str
    mtime: float | None = None
    mode: int | None = None
    expect: str | None = None

    def to_dict(self) -> dict[str, Any]:
        kept = {
            "path": self.path,
            "size": self.size,
            "sha256": self.sha256,
            "mtime": self.mtime,
            "mode": self.mode,
        }
        return kept if self.expect is None else {**kept, "expect": self.expect}


@dataclass
class Bundle:
    files: list[tuple[Member, bytes]] = field(default_factory=list)
    others: list[dict[str, Any]] = field(default_factory=list)


def member_of(
    path: str, data: bytes, mtime: float | None = None, mode: int | None = None, expect: str | None = None
) -> Member:
    return Member(path, len(data), hashlib.sha256(data).hexdigest(), mtime, mode, expect)


def pack(files: Iterable[tuple[Member, bytes]], others: Sequence[dict[str, Any]] = ()) -> bytes:
    """The compressed bundle of `files` (member, bytes) and byte-less `others`."""
    files = list(files)
    manifest = json.dumps(
        {"files": [m.to_dict() for m, _ in files], "others": list(others)}, separators=(",", ":")
    ).encode()
    raw = b"".join([HEADER.pack(MAGIC, len(manifest)), manifest, *(data for _, data in files)])
    return zstandard.ZstdCompressor(level=LEVEL, write_content_size=True).compress(raw)


def unpack(body: bytes, max_body: int = MAX_BODY, max_raw: int = MAX_RAW) -> Bundle:
    """The bundle in `body`; a 413 when it is too large, a 400 when it is not a whole bundle."""
    if len(body) > max_body:
        raise PayloadTooLargeError(
            f"a bundle is at most {max_body} bytes compressed", code="bundle-too-large"
        )
    raw = _inflate(body, max_raw)
    if len(raw) < HEADER.size:
        raise _bad("too short")
    magic, length = HEADER.unpack_from(raw)
    if magic != MAGIC or length > MAX_MANIFEST or HEADER.size + length > len(raw):
        raise _bad("no bundle header")
    files, others = _manifest(raw[HEADER.size : HEADER.size + length])
    offset, out = HEADER.size + length, Bundle(others=others)
    for member in files:
        out.files.append((member, raw[offset : offset + member.size]))
        offset += member.size
    if offset != len(raw):
        raise _bad("its files' sizes do not add up to its length")
    return out


def check_member(member: Member, data: bytes, max_size: int) -> str:
    """The member's canonical path once its path, size and hash are acceptable; else the error."""
    path = paths.normalize(member.path)
    if member.size > max_size:
        raise PayloadTooLargeError(
            f"{member.size} bytes is above the small-file threshold of {max_size}; upload it as a large file",
            code="too-large-for-small-file",
        )
    if hashlib.sha256(data).hexdigest() != member.sha256:
        raise BadRequestError("the file's bytes do not match its sha256", code="hash-mismatch")
    return path


def error_entry(path: Any, err: HyCloudError) -> dict[str, Any]:
    """A member's failure as bundle answers report it: the API's error shape plus its status."""
    return {
        "path": path if isinstance(path, str) else "",
        "status": "error",
        "error": {"code": err.code, "message": err.message, "status": err.status},
    }


def _inflate(body: bytes, max_raw: int) -> bytes:
    try:
        size = zstandard.frame_content_size(body)
    except zstandard.ZstdError:
        raise _bad("not a zstd frame") from None
    if size < 0:
        raise _bad("its frame does not declare its size")
    if size > max_raw:
        raise PayloadTooLargeError(f"a bundle is at most {max_raw} bytes inflated", code="bundle-too-large")
    try:
        raw = zstandard.ZstdDecompressor().decompress(body, max_output_size=max_raw)
    except zstandard.ZstdError:
        raise _bad("truncated or corrupt") from None
    if len(raw) != size:
        raise _bad("truncated or corrupt")
    return raw


def _manifest(text: bytes) -> tuple[list[Member], list[dict[str, Any]]]:
    try:
        doc = json.loads(text, parse_constant=_refuse)
    except (ValueError, RecursionError):
        raise _bad("its manifest is not JSON") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("files"), list):
        raise _bad("its manifest has no file list")
    others = doc.get("others", [])
    if not isinstance(others, list) or not all(isinstance(o, dict) for o in others):
        raise _bad("its manifest's 'others' is not a list of objects")
    if len(doc["files"]) + len(others) > MAX_MEMBERS:
        raise PayloadTooLargeError(f"a bundle holds at most {MAX_MEMBERS} files", code="bundle-too-large")
    return [_member(item) for item in doc["files"]], others


def _member(item: Any) -> Member:
    """A manifest entry, its types checked (so nothing later fails on them with a 500)."""
    if not isinstance(item, dict):
        raise _bad("a manifest entry is not an object")
    path, size, sha256 = item.get("path"), item.get("size"), item.get("sha256")
    mtime, mode = item.get("mtime"), item.get("mode")
    if not isinstance(path, str) or not paths.is_unicode(path):
        raise _bad("a manifest entry's path is not a string")
    if not _int(size) or size < 0:
        raise _bad(f"{path!r}: size is not a non-negative integer")
    if not _hex64(sha256):
        raise _bad(f"{path!r}: sha256 is not 64 lowercase hex digits")
    if mtime is not None and (
        not isinstance(mtime, int | float) or isinstance(mtime, bool) or not _time(mtime)
    ):
        raise _bad(f"{path!r}: mtime is not a time in epoch seconds")
    if mode is not None and (not _int(mode) or not 0 <= mode <= 0o777):
        raise _bad(f"{path!r}: mode is not permission bits (0-511)")
    expect = item.get("expect")
    if expect is not None and expect != ABSENT and not _hex64(expect):
        raise _bad(f"{path!r}: expect is neither a content hash nor {ABSENT!r}")
    return Member(path, size, sha256, None if mtime is None else float(mtime), mode, expect)


def _hex64(value: Any) -> TypeGuard[str]:
    return isinstance(value, str) and len(value) == 64 and all(c in "0123456789abcdef" for c in value)


def _int(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _time(value: float) -> bool:
    return math.isfinite(value) and 0 <= value <= 2**34


def _refuse(name: str) -> float:
    raise ValueError(name)


def _bad(why: str) -> BadRequestError:
    return BadRequestError(f"body is not a valid bundle: {why}", code="bad-bundle")
