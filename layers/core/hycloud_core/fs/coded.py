"""Erasure-coded large files, coordinated by the home controller (docs/GEO.md).

The client codes the file and names every block by its sha256; the controller places the blocks
by the ring, hands out presigned PUTs to each instance's bucket (S3 checks each body against its
declared SHA-256), verifies every block by a HEAD before it links the file, and hands out
presigned GETs for downloads. Data regions need no table or function of their own for this.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Any

from botocore.exceptions import ClientError

from .. import paths
from ..coded_layout import CodedLayout, block_homes, block_key, merkle_hash, placed
from ..errors import ConflictError, NotFoundError
from ..instances import Instance
from .operations import FileSystem

URL_TTL_S = 3600


def _b64(hex_hash: str) -> str:
    return base64.b64encode(bytes.fromhex(hex_hash)).decode()


class CodedFiles:
    """`s3_for(region)`: an S3 client for that region's bucket."""

    def __init__(self, fs: FileSystem, instances: list[Instance], s3_for: Callable[[str], Any]) -> None:
        self.fs, self.s3_for = fs, s3_for
        self.buckets = {i.region: i.bucket for i in instances}

    @property
    def regions(self) -> list[str]:
        return list(self.buckets)

    def _head(self, region: str, block_hash: str) -> dict | None:
        s3 = self.s3_for(region)
        try:
            return s3.head_object(
                Bucket=self.buckets[region], Key=block_key(block_hash), ChecksumMode="ENABLED"
            )
        except ClientError as err:
            if err.response.get("Error", {}).get("Code") in ("404", "NoSuchKey", "NotFound"):
                return None
            raise

    def _has(self, region: str, block_hash: str, size: int) -> bool:
        head = self._head(region, block_hash)
        return bool(
            head
            and head.get("ContentLength") == size
            and head.get("ChecksumSHA256") == _b64(block_hash)
        )

    def start(self, size: int, layout: CodedLayout) -> dict:
        """Place the blocks; presigned PUTs for those their instance does not hold yet."""
        layout = placed(layout, size, self.regions)
        urls = {}
        for ci, bi, block in block_homes(layout):
            if not self._has(block.instance, block.hash, block.size):
                urls[f"{ci}/{bi}"] = self.s3_for(block.instance).generate_presigned_url(
                    "put_object",
                    ExpiresIn=URL_TTL_S,
                    Params={
                        "Bucket": self.buckets[block.instance],
                        "Key": block_key(block.hash),
                        "ChecksumSHA256": _b64(block.hash),
                    },
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
        link = self.fs.ns.read_link(paths.normalize(path))
        if not link.erasure:
            raise NotFoundError(f"{path} is not an erasure-coded file", code="not-coded")
        return link, CodedLayout.from_dict(link.erasure)

    def download_urls(self, layout: CodedLayout) -> dict[str, str]:
        """A presigned GET for every block, keyed "chunk/block"."""
        return {
            f"{ci}/{bi}": self.s3_for(b.instance).generate_presigned_url(
                "get_object",
                ExpiresIn=URL_TTL_S,
                Params={"Bucket": self.buckets[b.instance], "Key": block_key(b.hash)},
            )
            for ci, bi, b in block_homes(layout)
            if b.instance in self.buckets
        }
