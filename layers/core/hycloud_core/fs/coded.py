"""Erasure-coded large files, coordinated by the home controller (docs/GEO.md).

The client codes the file and names every block by its sha256; the controller places the blocks
by the ring, hands out presigned PUTs to each instance's bucket (S3 checks each body against its
declared SHA-256), verifies every block by a HEAD before it links the file, and hands out
presigned GETs for downloads. Data regions need no table or function of their own for this.

Blocks dedup across files and users, so knowing block hashes must not be enough to link someone
else's file: `start` challenges a few random byte ranges of random blocks (all blocks, not only
those already stored: a block another user uploads between `start` and `commit` is covered too),
and `commit` links only with the answer (`content.possession_proof`), as single-region dedup does.

Nor must it be enough to write over someone else's block: PUT URLs go only to blocks of the
caller's own open upload (its pages as `start` placed them, remembered by digest), and never to a
block key that holds an object, whatever it holds: a block that is there is verified, not replaced.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from .. import content, paths
from ..codec.layout import COMMIT_CHECKS, URL_PAGE, Block, CodedLayout, block_homes, merkle_hash, placed
from ..errors import BadRequestError, ConflictError, NotFoundError, TryLaterError
from ..instances import Instance
from ..presigned import MAX_URL_TTL_S
from ..reach import BATCH
from .blocks import ABSENT, STORED, BlockStore
from .operations import FileSystem

URL_TTL_S = MAX_URL_TTL_S  # a block's PUT or GET; the client asks again when it expired
OPEN_UPLOAD_S = 3600  # how long an upload stays open after its start (no URL: not capped)
CHALLENGE_BLOCKS, CHALLENGE_LEN = 4, 64
HEADS_IN_FLIGHT = 8  # a page of blocks is checked together, not one HEAD after another
CHECK_BUDGET_S = 8.0  # what one request spends asking which blocks are stored
# A PUT URL needs its key seen empty, so a page of URLs may take longer (still well inside API
# Gateway's 29 s); a page not checked by then is asked again.
URL_CHECK_BUDGET_S = 16.0


class ChecksOutOfTime(TryLaterError):
    """A page of blocks not all checked within the budget (a loaded instance)."""


def _chained(chain: str, blocks: Sequence[Block]) -> str:
    """A running hash of verified blocks, one step per block: the same whatever the page sizes."""
    for b in blocks:
        chain = hashlib.sha256(f"{chain}|{b.instance}|{b.hash}|{b.size}".encode()).hexdigest()
    return chain


def _page_digest(blocks: Sequence[Block]) -> str:
    """What names a page of placed blocks in the upload's record (a few bytes per thousand blocks)."""
    return _chained("", blocks)[:32]


def _page_digests(layout: CodedLayout) -> list[str]:
    """The digest of every page of `URL_PAGE` blocks, in block order, as the client asks for URLs."""
    blocks = [b for _ci, _bi, b in block_homes(layout)]
    return [_page_digest(blocks[at : at + URL_PAGE]) for at in range(0, len(blocks), URL_PAGE)]


def _required_open(pending: dict[str, Any] | None) -> dict[str, Any]:
    """The upload's record while its challenge is open."""
    if pending is None or pending["expires"] < time.time():
        raise ConflictError("no open coded upload of this content; start it again", code="upload-required")
    return pending


def _refuse_missing(stored: Sequence[bool | None], first: int = 0) -> None:
    """409 when a block checked (from index `first`) is not stored as declared."""
    missing = [first + i for i, ok in enumerate(stored) if not ok]
    if missing:
        raise ConflictError(
            f"{len(missing)} block(s) are not stored as declared (first: block {missing[0]})",
            code="blocks-missing",
        )


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

    def _states(self, blocks: Sequence[Block], budget_s: float) -> list[str | None]:
        """What each block's key holds (blocks.ABSENT, STORED, OTHER), asked in parallel; None for
        the blocks not asked within the budget (a request stays well inside API Gateway's 29 s)."""
        deadline = time.monotonic() + budget_s
        regions = {b.instance for b in blocks}
        for region in regions:
            self.blocks.s3_for(region)  # clients are made once, before the threads share them
        # Another region's blocks, from inside the VPC, are asked a batch per reach call.
        carried = {r for r in regions if self.blocks.carried(r)}
        by_region = {r: [i for i, b in enumerate(blocks) if b.instance == r] for r in carried}
        batches = [ids[at : at + BATCH] for ids in by_region.values() for at in range(0, len(ids), BATCH)]
        singles = [[i] for i, b in enumerate(blocks) if b.instance not in carried]

        def states(indexes: list[int]) -> list[str | None]:
            if time.monotonic() > deadline:
                return [None] * len(indexes)
            asked = [blocks[i] for i in indexes]
            return list(self.blocks.states(asked[0].instance, [(b.hash, b.size) for b in asked]))

        found: list[str | None] = [None] * len(blocks)
        with ThreadPoolExecutor(HEADS_IN_FLIGHT) as pool:
            for indexes, got in zip(batches + singles, pool.map(states, batches + singles), strict=True):
                for i, state in zip(indexes, got, strict=True):
                    found[i] = state
        return found

    def _stored(self, blocks: Sequence[Block], budget_s: float) -> list[bool | None]:
        """Whether each block's instance holds it (size and checksum); None where not asked."""
        return [None if s is None else s == STORED for s in self._states(blocks, budget_s)]

    def _put_urls(self, blocks: Sequence[Block]) -> list[str | None]:
        """A presigned PUT for each block whose key holds nothing yet (None for the others: a block
        stored, or an object there that is not the block declared, is never written over). A page
        not checked within the budget is asked again (503): a URL is only for a key seen empty."""
        states = self._states(blocks, URL_CHECK_BUDGET_S)
        if None in states:
            raise ChecksOutOfTime("the blocks' check ran out of time; ask again")
        return [
            self.blocks.presigned(b.instance, b.hash, "put_object", URL_TTL_S) if s == ABSENT else None
            for b, s in zip(blocks, states, strict=True)
        ]

    def start(self, size: int, layout: CodedLayout, content_hash: str) -> dict[str, Any]:
        """Place the blocks; presigned PUTs for those of the first page their instance does not hold
        yet (`more`: where `more_urls` goes on), and the challenge the commit must answer."""
        layout = placed(layout, size, self.regions)
        homes = list(block_homes(layout))[:URL_PAGE]
        urls = self._put_urls([b for _ci, _bi, b in homes])
        answer: dict[str, Any] = {
            "layout": layout.to_dict(),
            "urls": {f"{ci}/{bi}": url for (ci, bi, _b), url in zip(homes, urls, strict=True) if url},
            "challenge": self._challenge(content_hash, layout),
        }
        if layout.block_count > URL_PAGE:
            answer["more"] = URL_PAGE
        return answer

    def _open(self, content_hash: str, blocks: Sequence[Block]) -> dict[str, Any]:
        """The upload `start` opened, if `blocks` are on the instances of the ring it placed by."""
        pending = _required_open(self.fs.records.get_upload(self.fs.user, _pending_key(content_hash)))
        ring = set(pending.get("ring") or self.regions) & set(self.regions)
        strange = sorted({b.instance for b in blocks} - ring)
        if strange:
            raise BadRequestError(f"{strange[0]} is not an instance of this upload", code="bad-layout")
        return pending

    def more_urls(self, content_hash: str, blocks: Sequence[Block]) -> list[str | None]:
        """PUT URLs for a page of blocks past the first of an open upload: one of the pages its
        start placed, block for block, and nothing else."""
        pending = self._open(content_hash, blocks)
        if _page_digest(blocks) not in set(pending.get("pages") or ()):
            raise BadRequestError(
                "these blocks are not a page of this upload's layout as its start placed it",
                code="not-in-upload",
            )
        return self._put_urls(blocks)

    def verify(self, content_hash: str, first: int, blocks: Sequence[Block]) -> int:
        """Check an open upload's blocks in place from block `first`, in block order, as many of
        `blocks` as the budget allows, so that the commit of a file of many blocks does not HEAD
        them again; where the next request starts."""
        pending = self._open(content_hash, blocks)
        done = int(pending.get("verified", 0))
        if first != done:
            raise ConflictError(f"verify the blocks from {done} on", code="verify-order")
        stored = self._stored(blocks, CHECK_BUDGET_S)
        asked = stored.index(None) if None in stored else len(stored)
        _refuse_missing(stored[:asked], first)
        chain = _chained(str(pending.get("chain", "")), blocks[:asked])
        user, key, after = self.fs.user, _pending_key(content_hash), done + asked
        if not self.fs.records.update_upload(user, key, {"verified": done}, verified=after, chain=chain):
            raise ConflictError(
                "these blocks were verified meanwhile; go on where it says", code="verify-order"
            )
        return after

    def _check_stored(self, pending: dict[str, Any] | None, layout: CodedLayout) -> None:
        """Every block in place with its size and checksum: verified page by page before (`verify`),
        or HEADed here when one request can."""
        blocks = [b for _ci, _bi, b in block_homes(layout)]
        if (
            pending
            and pending.get("verified") == len(blocks)
            and pending.get("chain") == _chained("", blocks)
        ):
            return
        if len(blocks) > COMMIT_CHECKS:
            raise ConflictError(
                f"a layout of more than {COMMIT_CHECKS} blocks is verified before its commit "
                "(POST /v1/coded/uploads/verify)",
                code="verify-required" if pending else "upload-required",
            )
        _refuse_missing(self._stored(blocks, float("inf")))

    def _challenge(self, content_hash: str, layout: CodedLayout) -> dict[str, Any]:
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
            pages=_page_digests(layout),  # the only blocks more_urls signs PUTs for
            expires=int(time.time()) + OPEN_UPLOAD_S,
            verified=0,
            chain="",
        )
        return {"nonce": nonce, "ranges": ranges}

    def _check_proof(
        self, content_hash: str, pending: dict[str, Any] | None, layout: CodedLayout, proof: str | None
    ) -> None:
        """The answer to the challenge of `start`, from the stored blocks; one answer per challenge."""
        records, key = self.fs.records, _pending_key(content_hash)
        pending = _required_open(pending)
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
        sha256: str | None = None,
    ) -> Any:
        """Link the file once every block is in place with its size and checksum, and the caller
        proved it holds the blocks; `sha256` (the client's plain sum) is kept in the link."""
        path = paths.normalize(path)
        pending = self.fs.records.get_upload(self.fs.user, _pending_key(content_hash))
        layout = placed(layout, size, self._ring_at_start(pending))
        self._check_stored(pending, layout)
        self._check_proof(content_hash, pending, layout, proof)
        layout.merkle = merkle_hash(content_hash, layout)
        fs = self.fs
        with fs._leases(path), fs.quota.writing(fs.ns, path, size):
            fs._require_parent(path, parents)
            fs.check_expected(path, expect)
            mode = None if mode is None else mode & 0o777
            return fs._link(path, content_hash, size, mtime, mode, layout.to_dict(), sha256)

    def _ring_at_start(self, pending: dict[str, Any] | None) -> list[str]:
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

    def download_urls(self, layout: CodedLayout, first: int = 0) -> dict[str, str]:
        """A presigned GET for every block of the page from block `first`, keyed "chunk/block"."""
        homes = list(block_homes(layout))[first : first + URL_PAGE]
        return {
            f"{ci}/{bi}": self.blocks.presigned(b.instance, b.hash, "get_object", URL_TTL_S)
            for ci, bi, b in homes
            if b.instance in self.blocks.buckets
        }
