"""Erasure-coded large files, coordinated by the home controller (docs/GEO.md).

The client codes the file and names every block by its sha256; the controller places the blocks
by the ring, hands out presigned PUTs to each instance's bucket (S3 checks each body against its
declared SHA-256), verifies every block by a HEAD before it links the file, and hands out
presigned GETs for downloads. Data regions need no table or function of their own for this.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .. import paths
from ..coded_layout import CodedLayout, block_homes, merkle_hash, placed
from ..errors import ConflictError, NotFoundError
from ..instances import Instance
from .blocks import BlockStore
from .operations import FileSystem

URL_TTL_S = 3600


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

    def start(self, size: int, layout: CodedLayout) -> dict:
        """Place the blocks; presigned PUTs for those their instance does not hold yet."""
        layout = placed(layout, size, self.regions)
        urls = {}
        for ci, bi, block in block_homes(layout):
            if not self._has(block.instance, block.hash, block.size):
                urls[f"{ci}/{bi}"] = self.blocks.presigned(
                    block.instance, block.hash, "put_object", URL_TTL_S
                )
        return {"layout": layout.to_dict(), "urls": urls}

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
    ) -> Any:
        """Link the file once every block is in place with its size and checksum."""
        path = paths.normalize(path)
        layout = placed(layout, size, self.regions)
        missing = [
            f"{ci}/{bi}" for ci, bi, b in block_homes(layout) if not self._has(b.instance, b.hash, b.size)
        ]
        if missing:
            raise ConflictError(
                f"{len(missing)} block(s) are not stored as declared (first: {missing[0]})",
                code="blocks-missing",
            )
        layout.merkle = merkle_hash(path, content_hash, layout)
        fs = self.fs
        with fs._leases(path), fs.quota.writing(fs.ns, path, size):
            fs._require_parent(path, parents)
            fs._check_expected(path, expect)
            return fs._link(
                path, content_hash, size, mtime, None if mode is None else mode & 0o777, layout.to_dict()
            )

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
