"""Link files: the EFS stand-in for a large file whose content lives in S3.

A link file is a small JSON document at the file's own path. It is told apart from a small
file by its mode: the sticky bit, which means nothing on a regular file, is set on link files
only, so a listing knows without opening every file. The JSON carries a magic and version so
that a stray sticky bit on user data is never mistaken for a link.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from typing import Any

MAGIC = "hycloud-link"
VERSION = 1
LINK_MODE = 0o640 | stat.S_ISVTX
MAX_HISTORY = 16


@dataclass
class LinkFile:
    content_hash: str
    size: int
    mtime: float
    chunk_size: int | None = None  # chosen by adaptive delta encoding
    chunk_probabilities: dict[str, float] = field(default_factory=dict)
    signature_key: str | None = None  # checksum list location, when one is kept
    erasure: dict[str, Any] | None = None  # n, k, block hashes and instances
    # earlier versions at this path still kept for version-aware deltas: [content_hash, keep_until]
    history: list[list[Any]] = field(default_factory=list)
    mode: int | None = None  # permission bits the uploader gave (the link file's own mark them as a link)
    # the layouts of coded versions in `history`, by content hash: their blocks are their only copy
    history_erasure: dict[str, dict[str, Any]] = field(default_factory=dict)
    # the plain sha256 of the content (what `sha256sum` prints), as the uploader computed it in the
    # pass that made the part digests; None for content stored before it was kept
    sha256: str | None = None
    # written by a delta upload before its version reached S3 (store/objects.py, settling): readers
    # of the object wait for it; a later version's link does not carry it
    settling: bool = False

    def superseded_by(
        self,
        content_hash: str,
        size: int,
        mtime: float,
        keep_s: int,
        now: float,
        mode: int | None = None,
        sha256: str | None = None,
    ) -> LinkFile:
        """The link of a new version at this path: it keeps the file's adaptive chunk size and
        remembers this version (and earlier ones still kept) for `keep_s`."""
        history = [[h, until] for h, until in self.history if until > now and h != content_hash]
        if keep_s > 0 and self.content_hash != content_hash:
            history = [[self.content_hash, int(now + keep_s)], *history][:MAX_HISTORY]
        layouts = {**self.history_erasure, **({self.content_hash: self.erasure} if self.erasure else {})}
        kept = {h for h, _until in history}
        return LinkFile(
            content_hash=content_hash,
            size=size,
            mtime=mtime,
            chunk_size=self.chunk_size,
            chunk_probabilities=self.chunk_probabilities,
            history=history,
            mode=self.mode if mode is None else mode,
            history_erasure={h: e for h, e in layouts.items() if h in kept},
            sha256=sha256,
        )

    def readable_versions(self, now: float) -> set[str]:
        return {self.content_hash} | {h for h, until in self.history if until > now}

    def to_bytes(self) -> bytes:
        return json.dumps({"magic": MAGIC, "version": VERSION, **asdict(self)}, sort_keys=True).encode()

    @classmethod
    def from_bytes(cls, data: bytes) -> LinkFile:
        doc = json.loads(data)
        if doc.pop("magic", None) != MAGIC or doc.pop("version", None) != VERSION:
            raise ValueError("not a HyCloud link file")
        known = {f for f in cls.__dataclass_fields__}
        return cls(**{k: v for k, v in doc.items() if k in known})


def is_link_mode(mode: int) -> bool:
    return stat.S_ISREG(mode) and bool(mode & stat.S_ISVTX)


def link_files_under(folder: str) -> Iterator[LinkFile]:
    """Every link file below `folder`; one that vanishes or is not a link while read is skipped."""
    return (link for _host, link in link_paths_under(folder))


def link_paths_under(folder: str) -> Iterator[tuple[str, LinkFile]]:
    """(host path, link) of every link file below `folder`, skipping any that vanish while read."""
    for top, _dirs, files in os.walk(folder):
        for name in files:
            host = os.path.join(top, name)
            try:
                st = os.lstat(host)
                if not is_link_mode(st.st_mode) or stat.S_ISLNK(st.st_mode):
                    continue
                with open(host, "rb") as f:
                    link = LinkFile.from_bytes(f.read())
            except (OSError, ValueError):
                continue  # vanished meanwhile (its object was touched) or not a link
            yield host, link
