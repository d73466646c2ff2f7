"""Erasure-coded large files, coordinated by the home controller (docs/GEO.md).

The client codes the file and names every block by its sha256; the controller places the blocks
by the ring, hands out presigned PUTs to each instance's bucket (S3 checks each body against its
declared SHA-256), verifies every block by a HEAD before it links the file, and hands out
presigned GETs for downloads. Data regions need no table or function of their own for this.

Blocks dedup across files and users, so knowing block hashes must not be enough to link someone
else's file: `start` challenges a few random byte ranges of random blocks (all blocks, not only
those already stored: a block another user uploads between `start` and `commit` is covered too),
and `commit` links only with the answer (`content.possession_proof`), as single-region dedup does.
"""

from __future__ import annotations

import hmac
import secrets
import time
from collections.abc import Callable
from typing import Any

from .. import content, paths
from ..coded_layout import CodedLayout, block_homes, merkle_hash, placed
from ..errors import BadRequestError, ConflictError, NotFoundError
from ..instances import Instance
from .blocks import BlockStore
from .operations import FileSystem

URL_TTL_S = 3600
CHALLENGE_BLOCKS, CHALLENGE_LEN = 4, 64


def _pending_key(content_hash: str) -> str:
    return f"coded-{content_hash}"  # beside the user's multipart uploads, never an object's hash


class CodedFiles:
    """`s3_for(region)`: an S3 client for that region's bucket."""

    def __init__(self, fs: FileSystem, instances: list[Instance], s3_for: Callable[[str], Any]) -> None:
        self.fs = fs
        self.blocks = BlockStore(instances, s3_for)

    @property
    def regions(self) -> list[str]:
        return self.blocks.regions

    def _has(self, region: str, block_hash: str, size: int) -> bool:
        return self.blocks.has(region, block_hash, size)

    def start(self, size: int, layout: CodedLayout, content_hash: str) -> dict:
        """Place the blocks; presigned PUTs for those their instance does not hold yet, and the
        challenge the commit must answer."""
        layout = placed(layout, size, self.regions)
        urls = {}
        for ci, bi, block in block_homes(layout):
            if not self._has(block.instance, block.hash, block.size):
                urls[f"{ci}/{bi}"] = self.blocks.presigned(
                    block.instance, block.hash, "put_object", URL_TTL_S
                )
        return {"layout": layout.to_dict(), "urls": urls, "challenge": self._challenge(content_hash, layout)}

    def _challenge(self, content_hash: str, layout: CodedLayout) -> dict:
        blocks = [block for _ci, _bi, block in block_homes(layout)]
        ranges = []
        for _ in range(CHALLENGE_BLOCKS):
            block = secrets.choice(blocks)
            length = min(CHALLENGE_LEN, block.size)
            ranges.append([block.hash, secrets.randbelow(block.size - length + 1), length])
        nonce = secrets.token_hex(16)
        self.fs.records.put_upload(
            self.fs.user,
            _pending_key(content_hash),
            kind="coded",
            nonce=nonce,
            ranges=ranges,
            ring=sorted(self.regions),  # the commit places by it, whatever the ring is by then
            expires=int(time.time()) + URL_TTL_S,
        )
        return {"nonce": nonce, "ranges": ranges}

    def _check_proof(
        self, content_hash: str, pending: dict | None, layout: CodedLayout, proof: str | None
    ) -> None:
        """The answer to the challenge of `start`, from the stored blocks; one answer per challenge."""
        records, key = self.fs.records, _pending_key(content_hash)
        if pending is None or pending["expires"] < time.time():
            raise ConflictError(
                "no open coded upload of this content; start it again", code="upload-required"
            )
        records.delete_upload(self.fs.user, key)
        homes = {b.hash: b.instance for _ci, _bi, b in block_homes(layout)}
        if any(h not in homes for h, _o, _n in pending["ranges"]):
            raise BadRequestError("the layout is not the one the upload started with", code="bad-proof")
        pieces = [self.blocks.read_range(homes[h], h, int(o), int(n)) for h, o, n in pending["ranges"]]
        expected = content.possession_proof(pending["nonce"], pieces)
        if not isinstance(proof, str) or not hmac.compare_digest(proof, expected):
            raise BadRequestError("proof of possession does not match the blocks", code="bad-proof")

    def commit(
        self,
        path: str,
        content_hash: str,
        size: int,
        layout: CodedLayout,
        parents: bool = False,
        expect: str | None = None,
        mtime: float | None = None,
        mode: int | None = None,
        proof: str | None = None,
    ) -> Any:
        """Link the file once every block is in place with its size and checksum, and the caller
        proved it holds the blocks."""
        path = paths.normalize(path)
        pending = self.fs.records.get_upload(self.fs.user, _pending_key(content_hash))
        layout = placed(layout, size, self._ring_at_start(pending))
        missing = [
            f"{ci}/{bi}" for ci, bi, b in block_homes(layout) if not self._has(b.instance, b.hash, b.size)
        ]
        if missing:
            raise ConflictError(
                f"{len(missing)} block(s) are not stored as declared (first: {missing[0]})",
                code="blocks-missing",
            )
        self._check_proof(content_hash, pending, layout, proof)
        layout.merkle = merkle_hash(path, content_hash, layout)
        fs = self.fs
        with fs._leases(path), fs.quota.writing(fs.ns, path, size):
            fs._require_parent(path, parents)
            fs._check_expected(path, expect)
            return fs._link(
                path, content_hash, size, mtime, None if mode is None else mode & 0o777, layout.to_dict()
            )

    def _ring_at_start(self, pending: dict | None) -> list[str]:
        """The ring the upload's blocks were placed by: an upload that spans a ring change commits
        where its blocks are (a later migration moves them), unless an instance it used has left."""
        ring = (pending or {}).get("ring") or self.regions
        gone = sorted(set(ring) - set(self.regions))
        if gone:
            raise ConflictError(
                f"instance {gone[0]} left the ring since the upload started; start it again",
                code="ring-changed",
            )
        return list(ring)

    def layout(self, path: str) -> tuple[Any, CodedLayout]:
        link = self.fs.ns.current_link(paths.normalize(path))  # None for a folder or a small file
        if link is None or not link.erasure:
            raise NotFoundError(f"{path} is not an erasure-coded file", code="not-coded")
        return link, CodedLayout.from_dict(link.erasure)

    def download_urls(self, layout: CodedLayout) -> dict[str, str]:
        """A presigned GET for every block, keyed "chunk/block"."""
        return {
            f"{ci}/{bi}": self.blocks.presigned(b.instance, b.hash, "get_object", URL_TTL_S)
            for ci, bi, b in block_homes(layout)
            if b.instance in self.blocks.buckets
        }
