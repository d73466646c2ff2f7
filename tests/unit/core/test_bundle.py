"""The bundle format: round trips, and every malformed or oversized body refused with a 4xx."""

from __future__ import annotations

import hashlib
import json
import os
import struct

import pytest
import zstandard

from hycloud_core import bundle
from hycloud_core.errors import BadRequestError, InvalidPathError, PayloadTooLargeError


def _files(n: int = 3, size: int = 1000) -> list[tuple[bundle.Member, bytes]]:
    out = []
    for i in range(n):
        data = os.urandom(size)
        out.append((bundle.member_of(f"/d/f{i}", data, mtime=1_700_000_000.5 + i, mode=0o640 + i), data))
    return out


def _raw(manifest: dict, data: bytes = b"") -> bytes:
    text = json.dumps(manifest).encode()
    raw = struct.pack(">4sI", b"HCB1", len(text)) + text + data
    return zstandard.ZstdCompressor().compress(raw)


def test_round_trip_keeps_paths_bytes_hashes_times_and_modes():
    files = _files()
    others = [{"path": "/big", "status": "large", "size": 9}]
    out = bundle.unpack(bundle.pack(files, others))
    assert out.files == files
    assert out.others == others
    member, data = out.files[1]
    assert member.sha256 == hashlib.sha256(data).hexdigest()
    assert (member.mtime, member.mode) == (1_700_000_001.5, 0o641)


def test_empty_files_and_compression():
    text = b"def f():\n    return 1\n" * 2000
    files = [(bundle.member_of("/e", b""), b""), (bundle.member_of("/src.py", text), text)]
    body = bundle.pack(files)
    assert len(body) < len(text) / 10
    assert bundle.unpack(body).files == files


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"garbage that is not a bundle",
        zstandard.ZstdCompressor().compress(b"HCB1"),
        zstandard.ZstdCompressor().compress(b"XXXX\x00\x00\x00\x02{}"),
    ],
)
def test_garbage_is_a_400(body):
    with pytest.raises(BadRequestError) as err:
        bundle.unpack(body)
    assert err.value.status == 400 and err.value.code == "bad-bundle"


def test_truncated_body_is_a_400():
    body = bundle.pack(_files(5, 20_000))
    for cut in (len(body) - 1, len(body) // 2, 20):
        with pytest.raises(BadRequestError):
            bundle.unpack(body[:cut])


def test_sizes_that_do_not_add_up_are_a_400():
    data = b"abc"
    member = bundle.member_of("/a", data).to_dict()
    with pytest.raises(BadRequestError, match="add up"):
        bundle.unpack(_raw({"files": [member]}, data + b"extra"))
    with pytest.raises(BadRequestError, match="add up"):
        bundle.unpack(_raw({"files": [{**member, "size": 10}]}, data))


@pytest.mark.parametrize(
    "change",
    [
        {"path": 5},
        {"size": -1},
        {"size": True},
        {"sha256": "ABC"},
        {"mtime": "yesterday"},
        {"mtime": 1e300},
        {"mode": 0o1777},
    ],
)
def test_bad_manifest_entries_are_a_400(change):
    member = {**bundle.member_of("/a", b"abc").to_dict(), **change}
    with pytest.raises(BadRequestError):
        bundle.unpack(_raw({"files": [member]}, b"abc"))


def test_oversized_bodies_are_a_413():
    with pytest.raises(PayloadTooLargeError) as err:
        bundle.unpack(b"\x00" * (bundle.MAX_BODY + 1))
    assert err.value.status == 413
    bomb = bundle.pack([(bundle.member_of("/z", b"\x00" * (2 * 1024 * 1024)), b"\x00" * (2 * 1024 * 1024))])
    with pytest.raises(PayloadTooLargeError):  # refused from its header, before it is inflated
        bundle.unpack(bomb, max_raw=1024 * 1024)
    many = [(bundle.member_of(f"/f{i}", b""), b"") for i in range(bundle.MAX_MEMBERS + 1)]
    with pytest.raises(PayloadTooLargeError):
        bundle.unpack(bundle.pack(many))


def test_a_frame_without_its_size_is_refused():
    raw = struct.pack(">4sI", b"HCB1", 2) + b"{}"
    unsized = zstandard.ZstdCompressor(write_content_size=False).compress(raw)
    with pytest.raises(BadRequestError):
        bundle.unpack(unsized)


def test_members_are_checked_one_by_one():
    data = b"hello"
    ok = bundle.member_of("/a/b.txt", data)
    assert bundle.check_member(ok, data, 100) == "/a/b.txt"
    with pytest.raises(InvalidPathError):
        bundle.check_member(bundle.member_of("../x", data), data, 100)
    with pytest.raises(BadRequestError, match="sha256"):
        bundle.check_member(ok, b"hellO", 100)
    with pytest.raises(PayloadTooLargeError):
        bundle.check_member(ok, data, 4)
    entry = bundle.error_entry("../x", InvalidPathError("no"))
    assert entry == {
        "path": "../x",
        "status": "error",
        "error": {"code": "invalid-path", "message": "no", "status": 400},
    }
