"""The binary messages of the one-round Merkle exchange (`POST /v1/merkle/diff`, sketch.py).

Request (client to cloud): the scope (the folder compared) and one record per local folder at
or below it, in path order. A record carries the folder's full 16-byte hash and, optionally, a
sketch of its files: the first `p` bytes of each file's hash with its name, in name order::

    u8 version | str scope | varint n | n x (path, hash[16], u8 p, varint files, files x prefix[p])

Reply (cloud to client): only the records that are not equal, by index::

    u8 version | varint k | k x (varint index, u8 status, ...)
    DIFFERS: hash[16], bitmap of the record's sketch (1 = no cloud file has that prefix),
             varint m, m x entry (name, u8 kind, hash[16], f64 mtime)
    ABSENT:  nothing (no live folder there)
    NOT_DIR: hash[16], f64 mtime (the cloud has a file there)

Entries are the cloud's live children the sketch does not account for: files whose prefix is
in no local file's, folders with no record (without a sketch, p = 0: every live child). Paths
and names are front-coded against the previous one (varint shared bytes, varint length, bytes).

A reply of version 3 (asked for with `?below=N`) adds, after the answers, the whole subtree of
each folder only the cloud has (a rename's or a new folder's), so the client needs no request
per level to list them; `complete` is 0 for a subtree past the N entries the client allowed::

    varint t | t x (path, u8 complete, varint m, m x entry (path below the folder, ...))

A folder's listing, kept beside its Merkle item with the hash it was computed for (the cloud
reads a differing folder's children from it, store/sketch_reads.py); a folder child's entry is
followed by its folder id::

    u8 LISTING | hash[16] of the folder | varint m | m x (entry (as in a reply) [, str id])
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

VERSION = 2  # 2: file entries are prefixes of a file's hash with its name (sketch.named)
BELOW = 3  # a reply's version when it holds the subtrees of folders only the cloud has
LISTING = 1  # the listing's format
MAX_LISTING = 4000  # entries: a larger folder keeps none (an item is at most 400 KB) and is queried
HASH = 16
DIFFERS, ABSENT, NOT_DIR = 1, 2, 3
KINDS = {"file": 0, "dir": 1}
KIND_NAMES = {v: k for k, v in KINDS.items()}
MIN_PREFIX, MAX_PREFIX = 2, HASH
_F64 = struct.Struct("<d")


def prefix_length(siblings: int) -> int:
    """Bytes of each file's hash in a sketch of `siblings` files: a false match between a changed
    file and any sibling is then under 1 in 1,024 per folder (and settled when it happens)."""
    p = MIN_PREFIX
    while p < MAX_PREFIX and siblings * siblings * 1024 >= 1 << (8 * p):
        p += 1
    return p


@dataclass(frozen=True)
class Record:
    """A local folder: `path` relative to the scope ("" the scope itself, "a/b" below it)."""

    path: str
    hash: bytes
    prefix: int = 0  # bytes per file in the sketch; 0: no sketch (the cloud lists every child)
    files: tuple[bytes, ...] = ()  # prefixes of the folder's files' hashes, in name order


@dataclass(frozen=True)
class Entry:
    """One of the cloud's children: its name in the folder, kind, full hash and mtime."""

    name: str
    kind: str
    hash: bytes
    mtime: float


@dataclass
class Answer:
    """The cloud's reply about one record that is not equal."""

    status: int
    hash: bytes = b""
    mtime: float = 0.0
    unmatched: frozenset[int] = frozenset()  # indexes into the record's sketch
    entries: list[Entry] = field(default_factory=list)


@dataclass
class Subtree:
    """A folder only the cloud has (`path` relative to the scope) and every live node below it,
    named by path below the folder; `complete` False when the entries were cut short."""

    path: str
    complete: bool
    entries: list[Entry] = field(default_factory=list)


@dataclass(frozen=True)
class Request:
    scope: str
    records: tuple[Record, ...]


class _Writer:
    def __init__(self) -> None:
        self.out = bytearray()
        self.last = b""

    def varint(self, n: int) -> None:
        while n >= 0x80:
            self.out.append((n & 0x7F) | 0x80)
            n >>= 7
        self.out.append(n)

    def text(self, s: str) -> None:
        raw = s.encode()
        self.varint(len(raw))
        self.out += raw

    def coded(self, s: str) -> None:
        """Front-coded against the previous coded string."""
        raw, shared = s.encode(), 0
        limit = min(len(raw), len(self.last))
        while shared < limit and raw[shared] == self.last[shared]:
            shared += 1
        self.varint(shared)
        self.varint(len(raw) - shared)
        self.out += raw[shared:]
        self.last = raw


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data, self.at, self.last = memoryview(data), 0, b""

    def take(self, n: int) -> bytes:
        if self.at + n > len(self.data):
            raise ValueError("truncated message")
        out = bytes(self.data[self.at : self.at + n])
        self.at += n
        return out

    def byte(self) -> int:
        return self.take(1)[0]

    def varint(self) -> int:
        n, self.at = _varint_at(self.data, self.at)
        return n

    def text(self) -> str:
        return self.take(self.varint()).decode()

    def coded(self) -> str:
        shared = self.varint()
        if shared > len(self.last):
            raise ValueError("bad front coding")
        self.last = self.last[:shared] + self.take(self.varint())
        return self.last.decode()

    def f64(self) -> float:
        return float(_F64.unpack(self.take(8))[0])

    def end(self) -> None:
        if self.at != len(self.data):
            raise ValueError("trailing bytes")


def encode_request(request: Request) -> bytes:
    w = _Writer()
    w.out.append(VERSION)
    w.text(request.scope)
    w.varint(len(request.records))
    for r in request.records:
        if len(r.hash) != HASH or not 0 <= r.prefix <= MAX_PREFIX:
            raise ValueError(f"bad record {r.path!r}")
        w.coded(r.path)
        w.out += r.hash
        w.out.append(r.prefix)
        w.varint(len(r.files) if r.prefix else 0)
        for f in r.files if r.prefix else ():
            w.out += f[: r.prefix]
    return bytes(w.out)


def decode_request(data: bytes, max_records: int = 1 << 20) -> Request:
    r = _Reader(data)
    if r.byte() != VERSION:
        raise ValueError("unknown message version")
    scope, count = r.text(), r.varint()
    if count > max_records:
        raise ValueError("too many records")
    records = []
    for _ in range(count):
        path, digest, p = r.coded(), r.take(HASH), r.byte()
        if p > MAX_PREFIX:
            raise ValueError("bad prefix length")
        count = r.varint()
        if count and not p:
            raise ValueError("a sketch needs a prefix length")
        files = tuple(r.take(p) for _ in range(count))
        records.append(Record(path, digest, p, files))
    r.end()
    return Request(scope, tuple(records))


def encode_reply(
    answers: dict[int, Answer], records: tuple[Record, ...], below: list[Subtree] | None = None
) -> bytes:
    """A reply; with `below` (even empty), of version BELOW with those subtrees after the answers."""
    w = _Writer()
    w.out.append(VERSION if below is None else BELOW)
    w.varint(len(answers))
    for index in sorted(answers):
        a = answers[index]
        w.varint(index)
        w.out.append(a.status)
        if a.status == NOT_DIR:
            w.out += a.hash + _F64.pack(a.mtime)
        elif a.status == DIFFERS:
            w.out += a.hash + _bitmap(a.unmatched, len(records[index].files))
            w.varint(len(a.entries))
            w.last = b""
            for e in a.entries:
                _put_entry(w, e)
    if below is not None:
        w.varint(len(below))
        for tree in below:
            w.last = b""
            w.coded(tree.path)
            w.out.append(int(tree.complete))
            w.varint(len(tree.entries))
            w.last = b""
            for e in tree.entries:
                _put_entry(w, e)
    return bytes(w.out)


def decode_reply(data: bytes, records: tuple[Record, ...]) -> dict[int, Answer]:
    return decode_reply_below(data, records)[0]


def decode_reply_below(data: bytes, records: tuple[Record, ...]) -> tuple[dict[int, Answer], list[Subtree]]:
    """The answers and, in a reply of version BELOW, the subtrees of folders only the cloud has."""
    r = _Reader(data)
    version = r.byte()
    if version not in (VERSION, BELOW):
        raise ValueError("unknown message version")
    out: dict[int, Answer] = {}
    for _ in range(r.varint()):
        index, status = r.varint(), r.byte()
        if index >= len(records):
            raise ValueError("answer for no record")
        if status == NOT_DIR:
            out[index] = Answer(status, r.take(HASH), r.f64())
        elif status == DIFFERS:
            digest, bits = r.take(HASH), r.take((len(records[index].files) + 7) // 8)
            r.last = b""
            entries = [_entry(r) for _ in range(r.varint())]
            out[index] = Answer(status, digest, unmatched=_unbitmap(bits), entries=entries)
        elif status == ABSENT:
            out[index] = Answer(status)
        else:
            raise ValueError(f"unknown status {status}")
    below = _subtrees(r) if version == BELOW else []
    r.end()
    return out, below


def _subtrees(r: _Reader) -> list[Subtree]:
    out = []
    for _ in range(r.varint()):
        r.last = b""
        path, complete = r.coded(), r.byte()
        r.last = b""
        out.append(Subtree(path, bool(complete), [_entry(r) for _ in range(r.varint())]))
    return out


def encode_listing(folder_hash: bytes, entries: list[tuple[Entry, str]]) -> bytes | None:
    """The listing of a folder whose live children are `entries`, each with its folder id ("" for
    a file); None past MAX_LISTING."""
    if len(entries) > MAX_LISTING:
        return None
    w = _Writer()
    w.out.append(LISTING)
    w.out += folder_hash
    w.varint(len(entries))
    for e, folder_id in sorted(entries, key=lambda e: e[0].name):
        _put_entry(w, e)
        if e.kind == "dir":
            w.text(folder_id)
    return bytes(w.out)


def decode_listing(data: bytes, folder_hash: bytes) -> list[tuple[Entry, str]] | None:
    """The entries (with their folder ids) of a listing written for `folder_hash`; None for one
    written for another hash (the folder changed since) or in another format. Read in one loop
    over the bytes: the cloud decodes a listing per differing folder of every exchange."""
    if data[:1] != bytes([LISTING]) or data[1 : 1 + HASH] != folder_hash:
        return None
    count, at = _varint_at(data, 1 + HASH)
    out, last = [], b""
    for _ in range(count):
        shared, at = _varint_at(data, at)
        length, at = _varint_at(data, at)
        if shared > len(last) or at + length + 1 + HASH + 8 > len(data):
            raise ValueError("truncated listing")
        last = last[:shared] + data[at : at + length]
        at += length
        kind = KIND_NAMES.get(data[at])
        if kind is None:
            raise ValueError(f"unknown kind {data[at]}")
        entry = Entry(
            last.decode(), kind, data[at + 1 : at + 1 + HASH], _F64.unpack_from(data, at + 1 + HASH)[0]
        )
        at += 1 + HASH + 8
        folder_id = ""
        if kind == "dir":
            length, at = _varint_at(data, at)
            if at + length > len(data):
                raise ValueError("truncated listing")
            folder_id, at = data[at : at + length].decode(), at + length
        out.append((entry, folder_id))
    if at != len(data):
        raise ValueError("trailing bytes")
    return out


def _varint_at(data: bytes | memoryview, at: int) -> tuple[int, int]:
    """The varint at `at` and the offset after it."""
    n = shift = 0
    while True:
        if at >= len(data) or shift > 63:
            raise ValueError("bad varint")
        b = data[at]
        at += 1
        n |= (b & 0x7F) << shift
        if b < 0x80:
            return n, at
        shift += 7


def _put_entry(w: _Writer, e: Entry) -> None:
    w.coded(e.name)
    w.out.append(KINDS[e.kind])
    w.out += e.hash + _F64.pack(e.mtime)


def _entry(r: _Reader) -> Entry:
    name, kind = r.coded(), r.byte()
    if kind not in KIND_NAMES:
        raise ValueError(f"unknown kind {kind}")
    return Entry(name, KIND_NAMES[kind], r.take(HASH), r.f64())


def _bitmap(indexes: frozenset[int], n: int) -> bytes:
    out = bytearray((n + 7) // 8)
    for i in indexes:
        out[i >> 3] |= 1 << (i & 7)
    return bytes(out)


def _unbitmap(bits: bytes) -> frozenset[int]:
    return frozenset(i * 8 + j for i, b in enumerate(bits) if b for j in range(8) if b >> j & 1)
