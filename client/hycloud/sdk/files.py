"""File-like objects over HyCloud: seekable ranged reads, and writes spooled then uploaded on close.

A small file comes in one GET (its sha256 checked) and is then sliced in memory. A large file is
read with ranged GETs of its presigned S3 URL (an erasure-coded one chunk by chunk, each from k
verified blocks: transfer/coded.py ChunkReader), fetched again when S3 says it expired; if the file
was replaced meanwhile the read fails rather than mixing two versions. A single range cannot be
checked against the content hash (it covers whole 8 MiB parts); when a reader goes through the
whole file in order, the hash is checked at the end and a mismatch fails the last read.

A writer spools to a local temporary file and uploads it through `HyCloud.put` when closed (all
of put's checks apply); leaving a `with` block by an exception discards it instead.
"""

from __future__ import annotations

import io
import os
import tempfile
from typing import TYPE_CHECKING, Any, cast

import requests

from hycloud_core import content, paths
from hycloud_core.errors import ConflictError, HyCloudError, NotFoundError

from ..http import new_session
from ..preconditions import ABSENT
from ..transfer.retry import send_presigned
from ..verify import verified_body

if TYPE_CHECKING:
    from ..transfer.coded import ChunkReader
    from .client import HyCloud

READ_BUFFER = 1024 * 1024
LINK_TYPE = "application/vnd.hycloud.link+json"


class RemoteReader(io.RawIOBase):
    """Raw random-access reads of one remote file (wrap in io.BufferedReader for small reads)."""

    def __init__(self, client: HyCloud, path: str) -> None:
        super().__init__()
        self.client, self.path = client, path
        self._pos = 0
        self._data: bytes | None = None
        self._link: dict[str, Any] = {}
        self._session: requests.Session | None = None
        self._chunks: ChunkReader | None = None
        self._hasher: content.PartHasher | None = content.PartHasher()
        self._hashed_to = 0
        self._load()

    def _load(self) -> None:
        response = self.client._fetch(self.path)
        if response.headers.get("Content-Type", "").startswith(LINK_TYPE):
            self._link = response.json()
        else:
            self._data = verified_body(self.path, response)

    @property
    def size(self) -> int:
        return len(self._data) if self._data is not None else int(self._link["size"])

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: self.size}[whence]
        if base + offset < 0:
            raise ValueError(f"negative seek position {base + offset}")
        self._pos = base + offset
        return self._pos

    def readinto(self, buffer) -> int:
        if self.closed:
            raise ValueError("I/O operation on closed file")
        length = min(len(buffer), max(self.size - self._pos, 0))
        if length == 0:
            return 0
        data = self.read_range(self._pos, length)
        buffer[: len(data)] = data
        self._pos += len(data)
        return len(data)

    def readall(self) -> bytes:
        """The rest of the file in one ranged GET (the default would read it 8 KiB at a time)."""
        data = self.read_range(self._pos, self.size - self._pos)
        self._pos += len(data)
        return data

    def read_range(self, offset: int, length: int) -> bytes:
        """Bytes [offset, offset+length) clipped to the file: one ranged GET for a large file."""
        length = min(length, max(self.size - offset, 0))
        if length <= 0:
            return b""
        if self._data is not None:
            return self._data[offset : offset + length]
        data = self._ranged_get(offset, length)
        if len(data) != length:
            raise HyCloudError(
                f"short read of {self.path} at {offset}: {len(data)} of {length} bytes",
                code="download-failed",
            )
        self._check_in_order(offset, data)
        return data

    def _ranged_get(self, offset: int, length: int) -> bytes:
        if "erasure" in self._link:  # a coded file: the chunks that hold the range, from k blocks each
            from ..transfer.coded import ChunkReader  # the erasure decoder, loaded when first needed

            self._chunks = self._chunks or ChunkReader(self.client.http, self.path, self.client.transfer)
            return self._chunks.read(offset, length)
        session = self._session = self._session or new_session()
        headers, config = {"Range": f"bytes={offset}-{offset + length - 1}"}, self.client.transfer

        def get(url: str) -> requests.Response:
            return send_presigned(
                lambda: session.get(url, headers=headers, timeout=config.part_timeout), config
            )

        for attempt in range(2):
            r = get(self._link["url"])
            if r.status_code in (200, 206):
                return r.content if r.status_code == 206 else r.content[offset : offset + length]
            if r.status_code in (400, 403) and attempt == 0:
                self._refresh_link()  # presigned URL expired: ask for a new one
                continue
            break
        raise HyCloudError(f"S3 answered {r.status_code} for {self.path}", code="download-failed")

    def _refresh_link(self) -> None:
        old = self._link["content_hash"]
        self._load()
        if self._data is not None or self._link.get("content_hash") != old:
            raise ConflictError(f"{self.path} changed while it was open", code="changed-while-open")

    def _check_in_order(self, offset: int, data: bytes) -> None:
        """Hash what is read front to back; check it once the end is reached in order."""
        if self._hasher is None or offset != self._hashed_to:
            self._hasher = None  # out-of-order read: the whole-file hash can no longer be checked
            return
        self._hasher.update(data)
        self._hashed_to += len(data)
        if self._hashed_to == self.size and self._hasher.hexdigest() != self._link["content_hash"]:
            raise HyCloudError(
                f"read of {self.path} is corrupt (content hash mismatch)", code="corrupt-download"
            )

    def close(self) -> None:
        if self._session is not None:
            self._session.close()
        super().close()


class RemoteWriter(io.RawIOBase):
    """Writes land in a local temporary file; `close()` uploads it to `path`."""

    def __init__(self, client: HyCloud, path: str, parents: bool = False, expect: str | None = None) -> None:
        """`expect`: the version the path must hold when the upload commits (`preconditions.py`;
        `absent` for an exclusive create)."""
        super().__init__()
        self.client, self.path, self.parents, self.expect = client, path, parents, expect
        fd, self._spool_path = tempfile.mkstemp(prefix="hycloud-write-")
        self._spool = os.fdopen(fd, "w+b")
        self.result: dict | None = None

    def writable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def write(self, data) -> int:
        return self._spool.write(data)

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        return self._spool.seek(offset, whence)

    def tell(self) -> int:
        return self._spool.tell()

    def truncate(self, size: int | None = None) -> int:
        return self._spool.truncate(size)

    def close(self) -> None:
        """Upload what was written, then drop the spool file."""
        if self.closed:
            return
        try:
            self._spool.close()
            self.result = self.client.put(
                self._spool_path, self.path, parents=self.parents, expect=self.expect
            )
        finally:
            self.discard()

    def discard(self) -> None:
        """Close without uploading."""
        if not self._spool.closed:
            self._spool.close()
        if os.path.exists(self._spool_path):
            os.unlink(self._spool_path)
        super().close()

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.close()
        else:
            self.discard()


class BufferedRemoteWriter(io.BufferedWriter):
    """A buffered writer whose `with` block discards the file when it ends by an exception."""

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.close()
        else:
            cast(RemoteWriter, self.raw).discard()


def open_remote(
    client: HyCloud,
    path: str,
    mode: str = "rb",
    buffer_size: int = READ_BUFFER,
    parents: bool = False,
    encoding: str | None = None,
) -> io.IOBase:
    """`open()` for a remote path: "rb"/"wb"/"xb", or "r"/"w"/"x" for text. A writer fails at
    once, as `open()` does, when its folder is missing (unless `parents`: then it is made at
    close) or, for "x", when the path exists; an "x" upload commits only while nothing is there."""
    kind, binary = mode.replace("b", "").replace("t", ""), "b" in mode
    if kind not in ("r", "w", "x") or ("b" in mode and "t" in mode):
        raise HyCloudError(
            f"unsupported mode {mode!r}: use 'rb', 'wb', 'xb', 'r', 'w' or 'x'", code="bad-mode", status=400
        )
    if kind == "r":
        stream: io.BufferedReader | io.BufferedWriter = io.BufferedReader(
            RemoteReader(client, path), buffer_size
        )
    else:
        _check_writable(client, path, parents, exclusive=kind == "x")
        writer = RemoteWriter(client, path, parents, expect=ABSENT if kind == "x" else None)
        stream = BufferedRemoteWriter(writer, buffer_size)
    return stream if binary else io.TextIOWrapper(stream, encoding=encoding or "utf-8")


def _check_writable(client: HyCloud, path: str, parents: bool, exclusive: bool) -> None:
    """What would make the upload at close fail, found at open: a missing folder, an existing file."""
    if exclusive and client.exists(path):
        raise ConflictError(f"{paths.normalize(path)} already exists", code="already-exists")
    folder = paths.parent(paths.normalize(path))
    if parents or folder == "/":
        return
    try:
        client.stat(folder)
    except NotFoundError:
        raise NotFoundError(
            f"{folder} does not exist (open with parents=True to make it)", code="not-found"
        ) from None
