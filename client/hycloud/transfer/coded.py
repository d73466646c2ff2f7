"""Erasure-coded large files: code and upload to every instance, download from several at once.

Upload: the file is cut into chunks, each coded RS(n, k) into framed blocks (hycloud_core.codec)
kept in a temporary folder; the controller places them by the ring and hands out presigned PUTs
to each instance's bucket, then verifies and commits. Download: the planner (eq. 3/5) picks k
holders per chunk on this user's estimates; each instance's queue is fetched by its own
workers, and an instance that fails or falls behind loses its pending blocks to the others
(see Fetcher). Every block is checked against its sha256, every chunk against its own, and
the whole file against its content hash. A block whose presigned URL expired before it was used
gets a fresh one (its page's, asked again; renew.py), and only that block is sent or fetched again.
"""

from __future__ import annotations

import base64
import hashlib
import os
import tempfile
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import requests
from urllib3.exceptions import ProtocolError

from hycloud_core import content
from hycloud_core.codec.erasure import DEFAULT_CHUNK_SIZE, choose_params, decode_chunk, encode_stream
from hycloud_core.codec.layout import COMMIT_CHECKS, URL_PAGE, CodedLayout
from hycloud_core.control.planner import plan_download
from hycloud_core.errors import ConflictError, HyCloudError

from ..http import Transport, new_session
from ..verify import check_stored
from .config import DEFAULT, TransferConfig
from .endpoints import redirect
from .parallel import run_parallel
from .progress import Progress
from .renew import Fetch, UrlBook, expired_answer, with_renewal
from .retry import send_presigned, with_retries

HEDGE_FACTOR = 3.0  # a block in flight this many typical block times is fetched elsewhere too
HEDGE_MIN_S = 0.5
SETUP_ROUND_TRIPS = 2  # before an instance's first block: TCP connect, then the request
PROBE_BYTES = 256 * 1024  # a probe's read: long enough to pass the round trip, short beside a block
DROP_AFTER = 2  # connection failures in a row that drop an instance for the rest of the download
RECONNECT = TransferConfig(attempts=2, backoff_s=0.0)  # a dropped connection: one new one, at once
SessionFor = Callable[[str], requests.Session]


def default_code(instances: int) -> tuple[int, int]:
    """RS(3, 2) with three or more instances (the paper's smallest code), replication below."""
    return choose_params(instances, max_n=3)


# --- upload ----------------------------------------------------------------------------------
def _encode(local: Path, n: int, k: int, chunk_size: int, folder: Path) -> dict:
    """Code the file into `folder` (one file per block, named by its sha256); the layout body."""
    chunks = []
    with open(local, "rb") as src:
        for chunk in encode_stream(src, n, k, chunk_size):
            blocks = []
            for block in chunk.blocks:
                digest = hashlib.sha256(block).hexdigest()
                (folder / digest).write_bytes(block)
                blocks.append({"hash": digest, "size": len(block)})
            chunks.append({"length": chunk.length, "key": chunk.key, "blocks": blocks})
    return {"n": n, "k": k, "chunk_size": chunk_size, "chunks": chunks}


def _put(
    session: requests.Session, url: str, data: bytes, checksum: str, config: TransferConfig
) -> requests.Response:
    """One PUT of a block, sent again while it may yet succeed (retry.py); S3's last answer."""
    headers = {"x-amz-checksum-sha256": checksum}
    return send_presigned(
        lambda: session.put(url, data=data, headers=headers, timeout=config.block_timeout),
        config,
        config.block_attempts,
    )


def _put_block(
    session: requests.Session, book: UrlBook, key: str, path: Path, config: TransferConfig = DEFAULT
) -> int:
    """Bytes sent: the block, or 0 when, asked again for an expired URL, the cloud said it holds
    the block already (nothing is written over a stored block)."""
    data = path.read_bytes()
    checksum = base64.b64encode(bytes.fromhex(path.name)).decode()
    r = with_renewal(book, key, lambda url: _put(session, url, data, checksum, config))
    book.done(key)
    if r is None:
        return 0
    if r.status_code != 200:
        raise HyCloudError(
            f"S3 refused block {key} ({r.status_code}): {r.text[:200]}", code="block-upload-failed"
        )
    return len(data)


def _proof(challenge: dict, folder: Path) -> str:
    """Answer the controller's challenge from the coded blocks (proof of possession per block)."""
    pieces = []
    for block_hash, offset, length in challenge["ranges"]:
        with open(folder / block_hash, "rb") as f:
            f.seek(offset)
            pieces.append(f.read(length))
    return content.possession_proof(challenge["nonce"], pieces)


def _homes(started: dict) -> list[tuple[str, dict]]:
    """("chunk/block", block) for every block of the placed layout, in block order."""
    chunks = started["layout"]["chunks"]
    return [(f"{ci}/{bi}", b) for ci, c in enumerate(chunks) for bi, b in enumerate(c["blocks"])]


def _resuming(started: dict, progress: Progress) -> None:
    """Say so when the cloud holds blocks of this content already (an interrupted or earlier
    upload): those are not sent again. The start's page tells before anything is sent."""
    homes = _homes(started)
    first = homes[:URL_PAGE]
    held = [b for key, b in first if key not in started["urls"]]
    if not held:
        return
    of = f"{len(first)}" if len(first) == len(homes) else f"the first {len(first)}"
    progress.note(f"resuming: {len(held)} of {of} blocks are in the cloud already; not sent again")
    progress.advance(sum(b["size"] for b in held))


def _wire(page: list[tuple[str, dict]]) -> list[dict]:
    return [{"instance": b["instance"], "hash": b["hash"], "size": b["size"]} for _key, b in page]


def verify_blocks(http: Transport, started: dict, content_hash: str) -> None:
    """Have the controller check the blocks in place before the commit when there are more than
    it checks itself; each request answers how far it got."""
    homes = _homes(started)
    if len(homes) <= COMMIT_CHECKS:
        return
    at = 0
    while at < len(homes):
        body = {"content_hash": content_hash, "first": at, "blocks": _wire(homes[at : at + URL_PAGE])}
        reached = http.json("POST", "/v1/coded/uploads/verify", json=body)["verified"]
        if reached <= at:
            raise HyCloudError(f"the blocks' check made no progress at block {at}", code="verify-stalled")
        at = reached


def _put_urls(
    http: Transport, homes: list[tuple[str, dict]], content_hash: str, at: int
) -> dict[str, str | None]:
    """PUT URLs for the page of blocks from `at`, keyed "chunk/block"; None for a block the cloud
    holds already."""
    page = homes[at : at + URL_PAGE]
    body = {"content_hash": content_hash, "blocks": _wire(page)}
    got = http.json("POST", "/v1/coded/uploads/urls", json=body)
    return {key: url for (key, _b), url in zip(page, got["urls"], strict=True)}


def put_renewal(http: Transport, started: dict, content_hash: str) -> Fetch:
    """Fresh PUT URLs for the page (as the start placed it) of the block whose URL expired."""
    homes = _homes(started)
    index = {key: i for i, (key, _b) in enumerate(homes)}
    return lambda keys: _put_urls(http, homes, content_hash, index[keys[0]] // URL_PAGE * URL_PAGE)


def url_pages(http: Transport, started: dict, content_hash: str) -> Iterator[dict[str, str]]:
    """Block PUT URLs a page at a time, keyed "chunk/block": the start's own page, then one page per
    request (a file of several GiB has more URLs than one answer may hold), the next asked while
    the caller sends the blocks of this one."""
    yield dict(started["urls"])
    if started.get("more") is None:
        return
    homes = _homes(started)

    def fetch(at: int) -> dict[str, str]:
        return {key: url for key, url in _put_urls(http, homes, content_hash, at).items() if url}

    with ThreadPoolExecutor(1, thread_name_prefix="hycloud-urls") as ahead:
        at = started["more"]
        pending: Future[dict[str, str]] | None = ahead.submit(fetch, started["more"])
        while pending is not None:
            page = pending.result()
            at += URL_PAGE
            pending = ahead.submit(fetch, at) if at < len(homes) else None
            yield page


def upload_coded(
    http: Transport,
    local: Path,
    remote: str,
    parents: bool,
    progress: Progress,
    keep: dict,
    code: tuple[int, int] | None = None,
    chunk_size: int = DEFAULT_CHUNK_SIZE,
    report: bool = True,
    headers: dict[str, str] | None = None,
    config: TransferConfig = DEFAULT,
) -> dict:
    """Code, place, upload and commit `local` at `remote`; blocks an instance holds already are not
    sent. Reports each instance's upload rate (the controller's estimate before any download)."""
    regions = [i["region"] for i in http.json("GET", "/v1/instances")["instances"]]
    n, k = code or default_code(len(regions))
    size = os.path.getsize(local)
    content_hash, _, sha256 = content.hash_file_and_sha256(local)
    with tempfile.TemporaryDirectory(prefix="hycloud-coded-") as tmp:
        folder = Path(tmp)
        layout = _encode(local, n, k, chunk_size, folder)
        body = {
            "path": remote,
            "size": size,
            "content_hash": content_hash,
            "layout": layout,
            "parents": parents,
        }
        started = http.json("POST", "/v1/coded/uploads", json=body)
        placed = started["layout"]
        progress.start(
            f"upload {local.name} (RS({n},{k}))",
            sum(b["size"] for c in placed["chunks"] for b in c["blocks"]),
        )
        _resuming(started, progress)
        session, clock, sent = new_session(), _Clock(), 0
        book = UrlBook({}, put_renewal(http, started, content_hash))
        for urls in url_pages(http, started, content_hash):
            book.add(urls)
            items = []
            for key in urls:
                ci, bi = (int(x) for x in key.split("/"))
                block = placed["chunks"][ci]["blocks"][bi]
                items.append((block["instance"], key, folder / block["hash"]))
            for nbytes in run_parallel(
                lambda it: clock.timed(it[0], _put_block, session, book, *it[1:], config),
                items,
                config.workers,
            ):
                sent += nbytes
                progress.advance(nbytes)
        proof = _proof(started["challenge"], folder)
        verify_blocks(http, started, content_hash)
    commit = {**body, "proof": proof, "parents": parents, "sha256": sha256, **keep}
    entry = http.json("POST", "/v1/coded/commit", json=commit, headers=headers)
    check_stored(remote, entry.get("content_hash"), content_hash)
    samples = clock.samples("upload")
    if report and samples:  # a figure per instance before any download from it
        http.json("POST", "/v1/measurements", json={"samples": samples})
    return {**entry, "content_hash": content_hash, "sent_bytes": sent, "coded": {"n": n, "k": k}}


class _Clock:
    """Bytes and the span from first start to last end, per instance, of parallel transfers."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.seen: dict[str, list[float]] = {}  # region -> [bytes, first start, last end]

    def timed(self, region: str, fn: Callable[..., int], *args: object) -> int:
        began = time.perf_counter()
        nbytes = fn(*args)
        ended = time.perf_counter()
        with self.lock:
            got = self.seen.setdefault(region, [0, began, ended])
            got[0], got[1], got[2] = got[0] + nbytes, min(got[1], began), max(got[2], ended)
        return nbytes

    def samples(self, kind: str) -> list[dict]:
        return [
            {"instance": r, "bytes": int(b), "seconds": max(end - start, 1e-6), "kind": kind}
            for r, (b, start, end) in self.seen.items()
            if b > 0
        ]


def get_renewal(http: Transport, remote: str, plan: dict) -> Fetch:
    """Fresh GET URLs for the page of the block whose URL expired, from the plan of the same
    version (a file replaced since is not mixed with the blocks of its new version)."""
    layout = plan["layout"]
    index = {f"{c}/{b}": i for i, (c, b) in enumerate(_block_order(layout))}

    def fetch(keys: list[str]) -> dict[str, str]:
        first = index[keys[0]] // URL_PAGE * URL_PAGE
        page = http.json("GET", "/v1/plan", params={"path": remote, "first": first})
        if page["content_hash"] != plan["content_hash"]:
            raise ConflictError(f"{remote} changed while it was read", code="changed-while-open")
        return page["urls"]

    return fetch


def _block_order(layout: dict) -> list[tuple[int, int]]:
    return [(c, b) for c, chunk in enumerate(layout["chunks"]) for b in range(len(chunk["blocks"]))]


def fetch_plan(http: Transport, remote: str, attempts: int = 3) -> dict:
    """The download plan with every block's URL, gathered page by page; a file replaced between
    two pages is planned again from the start (the URLs of one version only)."""
    for _ in range(attempts):
        plan = http.json("GET", "/v1/plan", params={"path": remote})
        while plan.get("more") is not None:
            page = http.json("GET", "/v1/plan", params={"path": remote, "first": plan["more"]})
            if page["content_hash"] != plan["content_hash"]:
                break
            plan["urls"].update(page["urls"])
            plan["more"] = page.get("more")
        else:
            return plan
    raise HyCloudError(f"{remote} kept changing while its download was planned", code="changed", status=409)


# --- ranged reads ----------------------------------------------------------------------------
class ChunkReader:
    """One chunk at a time from k verified blocks (ranged reads: open(), fsspec, WebDAV, mount).

    Blocks come from the holders the caller's estimates rank fastest, another holder when one
    fails; the decoded chunk is checked against its sha256. The last chunk read is kept, so
    reads in order decode each chunk once."""

    def __init__(self, http: Transport, remote: str, config: TransferConfig = DEFAULT) -> None:
        self.http, self.remote, self.config = http, remote, config
        self.session = new_session()
        self.cached: tuple[int, bytes] | None = None
        self._plan()

    def _plan(self) -> None:
        answer = fetch_plan(self.http, self.remote)
        self.layout = CodedLayout.from_dict(answer["layout"])
        self.book = UrlBook(answer["urls"], get_renewal(self.http, self.remote, answer))
        self.content_hash = answer["content_hash"]
        self.costs = _costs(sorted(set(self.layout.instances)), answer.get("estimates") or {})

    def chunk(self, c: int) -> bytes:
        if self.cached is None or self.cached[0] != c:
            self.cached = (c, self._decode(c))
        return self.cached[1]

    def _decode(self, c: int) -> bytes:
        blocks = self.layout.chunks[c].blocks
        order = sorted(range(len(blocks)), key=lambda bi: self.costs.get(blocks[bi].instance, 0.0))
        got = []
        for bi in order:
            data = self._block(c, bi)
            if data is not None:
                got.append(data)
            if len(got) == self.layout.k:
                chunk = decode_chunk(got)
                if hashlib.sha256(chunk).hexdigest() == self.layout.chunks[c].key:
                    return chunk
                break
        raise HyCloudError(f"chunk {c} of {self.remote} cannot be read", code="download-failed")

    def _get(self, url: str) -> requests.Response:
        """One block's GET, sent again while it may yet succeed (retry.py)."""
        timeout = self.config.block_timeout
        return send_presigned(
            lambda: self.session.get(url, timeout=timeout), self.config, self.config.block_attempts
        )

    def _block(self, c: int, bi: int) -> bytes | None:
        """The verified block, or None when it cannot be had (another holder's is tried); a URL
        that expired is asked for again (a file replaced meanwhile fails the read)."""
        try:
            r = with_renewal(self.book, f"{c}/{bi}", self._get)
        except requests.RequestException:
            return None
        if r is None:
            return None
        block = self.layout.chunks[c].blocks[bi]
        ok = r.status_code == 200 and hashlib.sha256(r.content).hexdigest() == block.hash
        return r.content if ok else None

    def read(self, offset: int, length: int) -> bytes:
        """Bytes [offset, offset+length) of the file, from the chunks that hold them."""
        size, out = self.layout.chunk_size, bytearray()
        while length > 0:
            c, start = divmod(offset, size)
            piece = self.chunk(c)[start : start + length]
            if not piece:
                break
            out += piece
            offset, length = offset + len(piece), length - len(piece)
        return bytes(out)


# --- download --------------------------------------------------------------------------------
@dataclass
class InstanceStats:
    """What one instance's link did during a download: reported as a measurement."""

    nbytes: int = 0
    asked: int = 0
    blocks: int = 0
    failed: int = 0
    first: float | None = None
    last: float = 0.0
    rtt_s: float | None = None
    setup_s: float | None = None  # the first answer's wait: connection set-up and first round trip
    retried: int = 0  # requests sent again after the instance dropped the connection under them
    errors: list[str] = field(default_factory=list)  # why requests failed, the first few

    @property
    def seconds(self) -> float:
        return max(self.last - self.first, 1e-6) if self.first is not None else 0.0

    @property
    def rate(self) -> float | None:
        """Bytes/s once the link is set up: the per-byte cost of eq. 3/5 beside `setup_s`."""
        busy = self.seconds - (self.setup_s or 0.0)
        return self.nbytes / busy if self.nbytes and busy > 0 else None


@dataclass
class Fetcher:
    """Fetches k verified blocks of every chunk, following a plan but never waiting on a bad instance.

    `queues[r]` holds the chunks instance r serves, in plan order. A worker of r takes from its own
    queue; when that is empty it takes a chunk still queued at another instance that r also holds
    (the slow instance's pending blocks move to r), and at last a chunk whose block has been in
    flight elsewhere far longer than blocks take (the first k good blocks win); a block that fails
    is fetched from another holder, and an instance that cannot be reached is dropped with its
    whole queue. `wait()` returns once every chunk is written, without waiting for stragglers.
    """

    layout: CodedLayout
    urls: dict[str, str | None]  # None: a block that needs no URL any more (UrlBook)
    queues: dict[str, deque]
    get: Callable[[str, str], requests.Response]
    rebalance: bool = True  # False: keep to the queues (a fixed schedule, for comparison)
    # a fresh URL for a block whose URL S3 refused as expired (UrlBook.renew over `urls`)
    renew: Callable[[str, str], str | None] | None = None
    got: list[dict[int, bytes]] = field(init=False)
    stats: dict[str, InstanceStats] = field(init=False)

    def __post_init__(self) -> None:
        m = len(self.layout.chunks)
        self.got = [{} for _ in range(m)]
        self.tried: list[set[str]] = [set() for _ in range(m)]
        self.busy = [0] * m
        self.done = [False] * m
        self.orphans: deque[int] = deque()
        self.dead: set[str] = set()
        self.refused: dict[str, int] = {}  # connection failures in a row, per instance
        self.active: dict[str, int] = {}  # fetches in flight, per instance
        self.streams = 1
        self.inflight = 0
        self.running: dict[int, list[tuple[str, float]]] = {}  # chunk -> (instance, start) in flight
        self.block_seconds: dict[str, list[float]] = {}  # per instance, its good blocks' times
        self.planned = [{r for r, q in self.queues.items() if c in q} for c in range(m)]
        self.spare = {r for r, q in self.queues.items() if not q}
        self.moved = 0  # chunks served by an instance the plan did not pick
        self.written = 0
        self.alive = 0
        self.error: str | None = None
        self.cond = threading.Condition()
        self.stats = {r: InstanceStats() for r in self.queues}
        self.where = [{b.instance: bi for bi, b in enumerate(c.blocks)} for c in self.layout.chunks]

    def _open(self, c: int, r: str) -> bool:
        return not self.done[c] and r in self.where[c] and r not in self.tried[c]

    def _pick(self, r: str) -> int | None:
        own = self.queues[r]
        while own:
            c = own.popleft()
            if self._open(c, r):
                return c
        for c in list(self.orphans):
            if self._open(c, r):
                self.orphans.remove(c)
                return c
        if not self.rebalance:
            return None
        # only chunks waiting behind an instance whose every worker is busy: never race its own
        # workers; an instance the plan left out only stands in for failed or stuck blocks
        waiting = [
            s
            for s, q in self.queues.items()
            if s != r and q and self.active.get(s, 0) >= self.streams and r not in self.spare
        ]
        for s in sorted(waiting, key=lambda s: len(self.queues[s]), reverse=True):
            queue = self.queues[s]
            for at in range(len(queue) - 1, -1, -1):
                c = queue[at]
                if self._open(c, r) and self._sooner(r, s, at):
                    del queue[at]
                    return c
        return self._hedge(r)

    def _sooner(self, thief: str, owner: str, at: int) -> bool:
        """Whether `thief` would have a block in hand before `owner` reaches the one `at` places
        down its queue (its workers take `streams` at a time): a slow instance taking the last
        blocks of a fast one would end the download late. A thief with no block yet waits for
        one; an owner with none yet (a stuck instance) gives its blocks away."""
        mine, theirs = self.block_seconds.get(thief), self.block_seconds.get(owner)
        if not mine or not theirs:
            return bool(mine)
        return _median(mine) < (at // self.streams + 1) * _median(theirs)

    def _hedge(self, r: str) -> int | None:
        """A chunk whose fetches all run far longer than their instance's blocks take, that r can serve too."""
        now = time.perf_counter()
        known = [_median(t) for t in self.block_seconds.values() if t]
        fallback = max(known, default=1.0)

        def late(instance: str, began: float) -> bool:
            times = self.block_seconds.get(instance)
            return now - began > max(HEDGE_MIN_S, HEDGE_FACTOR * (_median(times) if times else fallback))

        stuck = [
            c
            for c, running in self.running.items()
            if running and all(late(s, t) for s, t in running) and self._open(c, r)
        ]
        return min(stuck, key=lambda c: min(t for _, t in self.running[c])) if stuck else None

    def _can_progress(self) -> bool:
        live = [r for r in self.queues if r not in self.dead]
        pending = [c for c in range(len(self.done)) if not self.done[c]]
        return any(self._open(c, r) for c in pending for r in live)

    def _next(self, r: str) -> int | None:
        with self.cond:
            while self.error is None and not all(self.done) and r not in self.dead:
                c = self._pick(r)
                if c is not None:
                    self.tried[c].add(r)
                    self.busy[c] += 1
                    self.running.setdefault(c, []).append((r, time.perf_counter()))
                    self.active[r] = self.active.get(r, 0) + 1
                    self.inflight += 1
                    return c
                if self.inflight == 0 and not self._can_progress():
                    self.error = "not enough reachable blocks to rebuild the file"
                    self.cond.notify_all()
                    return None
                self.cond.wait(0.2)
            return None

    def start(self, on_chunk: Callable[[int, list[bytes]], None], streams: int) -> None:
        self.streams = streams
        for r in self.queues:
            for _ in range(streams):
                self.alive += 1
                threading.Thread(
                    target=self.work, args=(r, on_chunk), daemon=True, name=f"hycloud-{r}"
                ).start()

    def wait(self) -> None:
        with self.cond:
            while self.error is None and self.written < len(self.done) and self.alive > 0:
                self.cond.wait(0.5)

    def work(self, r: str, on_chunk: Callable[[int, list[bytes]], None]) -> None:
        try:
            self._serve(r, on_chunk)
        finally:
            with self.cond:
                self.alive -= 1
                self.cond.notify_all()

    def _serve(self, r: str, on_chunk: Callable[[int, list[bytes]], None]) -> None:
        while (c := self._next(r)) is not None:
            bi = self.where[c][r]
            began = time.perf_counter()
            block, reachable = self._fetch(r, c, bi)
            ready = None
            with self.cond:
                self.inflight -= 1
                self.busy[c] -= 1
                self.active[r] -= 1
                self.running[c] = [(s, t) for s, t in self.running.get(c, []) if s != r]
                if not self.running[c] or self.done[c]:
                    self.running.pop(c, None)
                if block is not None and not self.done[c]:
                    self.block_seconds.setdefault(r, []).append(time.perf_counter() - began)
                    self.got[c][bi] = block
                    self.stats[r].blocks += 1
                    self.moved += r not in self.planned[c]
                    if len(self.got[c]) >= self.layout.k:
                        self.done[c], ready = True, list(self.got[c].values())
                        self.got[c] = {}
                if reachable:
                    self.refused[r] = 0
                if block is None:
                    self.orphans.append(c)
                    self.refused[r] = self.refused.get(r, 0) + (not reachable)
                    if self.refused[r] >= DROP_AFTER:
                        self.dead.add(r)
                        self.orphans.extend(self.queues[r])
                        self.queues[r].clear()
                self.cond.notify_all()
            if ready is not None:
                try:
                    on_chunk(c, ready)
                except Exception as err:  # a decode or write failure ends the whole download
                    with self.cond:
                        self.error = str(err)
                        self.cond.notify_all()
                    return
                with self.cond:
                    self.written += 1
                    self.cond.notify_all()

    def _fetch(self, r: str, c: int, bi: int) -> tuple[bytes | None, bool]:
        """The verified block, or None and whether the instance is still worth asking."""
        stats = self.stats[r]
        stats.asked += 1
        started = time.perf_counter()
        stats.first = started if stats.first is None else min(stats.first, started)
        try:
            response = self._renewed(r, f"{c}/{bi}")
        except requests.RequestException as exc:
            stats.failed += 1
            if len(stats.errors) < 5:
                stats.errors.append(f"{type(exc).__name__}: {exc}"[:300])
            return None, False
        except HyCloudError as err:  # no fresh URL: the file changed, or S3 keeps refusing them
            with self.cond:
                self.error = self.error or str(err)
                self.cond.notify_all()
            return None, True
        if response is None:
            stats.failed += 1
            return None, True
        stats.last = max(stats.last, time.perf_counter())
        elapsed = response.elapsed.total_seconds()
        stats.rtt_s = elapsed if stats.rtt_s is None else min(stats.rtt_s, elapsed)
        stats.setup_s = elapsed if stats.setup_s is None else stats.setup_s
        block = response.content
        if (
            response.status_code != 200
            or hashlib.sha256(block).hexdigest() != self.layout.chunks[c].blocks[bi].hash
        ):
            stats.failed += 1
            return None, True
        stats.nbytes += len(block)
        return block, True

    def _renewed(self, r: str, key: str) -> requests.Response | None:
        """The block's GET, again with a fresh URL while S3 says the one used expired."""
        url = self.urls.get(key)
        while url is not None:
            response = self._get(r, url)
            if self.renew is None or not expired_answer(response):
                return response
            response.close()
            url = self.renew(key, url)
        return None

    def _get(self, r: str, url: str) -> requests.Response:
        """One request, sent once more when the instance closed the connection under it (a kept-alive
        connection it had already closed, or a link that dropped it): a new connection may well
        work, so that alone is no sign the instance is unreachable. Refusals and timeouts are."""

        def again(_retry: int) -> None:
            self.stats[r].retried += 1

        return with_retries(
            lambda: self.get(r, url), RECONNECT, retry_error=dropped_connection, on_retry=again
        )


def dropped_connection(exc: BaseException) -> bool:
    """The peer closed or reset a connection that was open: not a refusal or a timeout."""
    if isinstance(exc, requests.Timeout):
        return False
    if isinstance(exc, requests.exceptions.ChunkedEncodingError):
        return True
    reason = exc.args[0] if exc.args else None
    return isinstance(exc, requests.ConnectionError) and isinstance(reason, ProtocolError)


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[len(ordered) // 2]


def _costs(regions: list[str], estimates: dict[str, float | None]) -> dict[str, float]:
    """Seconds per byte per instance; an unmeasured one is taken as the median measured speed."""
    known = sorted(v for v in estimates.values() if v)
    fallback = known[len(known) // 2] if known else 1.0
    return {r: 1.0 / (estimates.get(r) or fallback) for r in regions}


def setup_seconds(latencies_ms: dict[str, float]) -> dict[str, float]:
    """An instance's set-up before its first block: a connection and a request, two round trips
    of its measured latency (the lowest response time its transfers saw)."""
    return {r: SETUP_ROUND_TRIPS * ms / 1000 for r, ms in latencies_ms.items() if ms}


def plan_queues(
    layout: CodedLayout, estimates: dict[str, float | None], setup: dict[str, float] | None = None
) -> tuple[dict[str, deque], float]:
    """Per instance the chunks it serves (the planner's choice) and the predicted time; `setup`:
    seconds each instance costs once if used (eq. 3/5 with a fixed cost per instance)."""
    regions = sorted({b.instance for c in layout.chunks for b in c.blocks})
    sizes = [c.blocks[0].size for c in layout.chunks]
    holders = [[b.instance for b in c.blocks] for c in layout.chunks]
    assignment, makespan = plan_download(sizes, holders, layout.k, _costs(regions, estimates), setup)
    queues: dict[str, deque] = {r: deque() for r in regions}
    for c, chosen in enumerate(assignment):
        for r in chosen:
            queues[r].append(c)
    return queues, makespan


def probe_unmeasured(
    layout: CodedLayout, urls: dict[str, str], regions: list[str], get: Callable[..., requests.Response]
) -> list[dict]:
    """A small ranged read of one block on each instance no transfer measured yet: a figure for
    the planner instead of the median of the others. An instance that fails it gets none."""
    first: dict[str, str] = {}
    for ci, chunk in enumerate(layout.chunks):
        for bi, block in enumerate(chunk.blocks):
            first.setdefault(block.instance, f"{ci}/{bi}")

    def probe(region: str) -> dict | None:
        began = time.perf_counter()
        try:
            r = get(region, urls[first[region]], headers={"Range": f"bytes=0-{PROBE_BYTES - 1}"})
        except (requests.RequestException, KeyError):
            return None
        seconds = time.perf_counter() - began
        if r.status_code not in (200, 206) or not r.content:
            return None
        return {"instance": region, "bytes": len(r.content), "seconds": max(seconds, 1e-6), "kind": "probe"}

    return [p for p in run_parallel(probe, [r for r in regions if r in first], len(regions) or 1) if p]


def download_coded(
    http: Transport,
    remote: str,
    local: Path,
    progress: Progress,
    endpoints: dict[str, str] | None = None,
    session_for: SessionFor | None = None,
    report: bool = True,
    config: TransferConfig = DEFAULT,
) -> dict:
    """Download a coded file from several instances at once into `local` (replaced once verified).

    `endpoints` sends an instance's requests to another host:port, `session_for` gives each
    instance its own HTTP session (an emulated link in the benchmarks).
    """
    answer = fetch_plan(http, remote)
    layout = CodedLayout.from_dict(answer["layout"])
    endpoints = endpoints or {}
    holders = sorted({b.instance for c in layout.chunks for b in c.blocks})
    sessions = {r: (session_for(r) if session_for else new_session()) for r in holders}  # a pool each

    def get(region: str, url: str, **kwargs: Any) -> requests.Response:
        return sessions[region].get(
            redirect(url, endpoints.get(region)), timeout=config.block_timeout, **kwargs
        )

    estimates = dict(answer.get("estimates") or {})
    probes = probe_unmeasured(layout, answer["urls"], [r for r in holders if estimates.get(r) is None], get)
    estimates.update({p["instance"]: p["bytes"] / p["seconds"] for p in probes})
    queues, predicted = plan_queues(layout, estimates, setup_seconds(answer.get("latencies_ms") or {}))

    book = UrlBook(answer["urls"], get_renewal(http, remote, answer))
    fetcher = Fetcher(layout, book.urls, queues, get, renew=book.renew)
    tmp = local.with_name(local.name + ".hycloud-part")
    progress.start(f"download {remote} (RS({layout.n},{layout.k}))", answer["size"])
    started = time.perf_counter()
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.ftruncate(fd, answer["size"])

        def write(c: int, blocks: list[bytes]) -> None:
            chunk = decode_chunk(blocks)
            if hashlib.sha256(chunk).hexdigest() != layout.chunks[c].key:
                raise HyCloudError(f"chunk {c} of {remote} is corrupt", code="corrupt-download")
            with fetcher.cond:  # never after the file is closed (its descriptor may be reused)
                if fetcher.error is not None:
                    raise HyCloudError("download ended", code="download-failed")
                os.pwrite(fd, chunk, c * layout.chunk_size)
            progress.advance(len(chunk))

        fetcher.start(write, config.streams_per_instance)
        fetcher.wait()
    finally:
        with fetcher.cond:  # a straggler's late block is no longer written
            fetcher.error = fetcher.error or ("" if fetcher.written == len(fetcher.done) else "interrupted")
        os.close(fd)
    seconds = time.perf_counter() - started
    try:
        if fetcher.error or fetcher.written < len(fetcher.done):
            raise HyCloudError(f"download of {remote} failed: {fetcher.error}", code="download-failed")
        if content.hash_file(tmp)[0] != answer["content_hash"]:
            raise HyCloudError(
                f"download of {remote} is corrupt (content hash mismatch)", code="corrupt-download"
            )
        tmp.replace(local)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    samples = [
        {
            "instance": r,
            "bytes": s.nbytes,
            "seconds": s.seconds,
            **({"rtt_ms": s.rtt_s * 1000} if s.rtt_s else {}),
        }
        for r, s in fetcher.stats.items()
        if s.nbytes > 0
    ]
    if report and (samples or probes):
        http.json("POST", "/v1/measurements", json={"samples": [*probes, *samples]})
    return {
        "seconds": seconds,
        "probed": sorted(p["instance"] for p in probes),
        "predicted_seconds": predicted,
        "per_instance": {
            r: {"bytes": s.nbytes, "asked": s.asked, "blocks": s.blocks, "failed": s.failed}
            for r, s in fetcher.stats.items()
        },
        "unreachable": sorted(fetcher.dead),
        "moved_blocks": fetcher.moved,
        "samples": samples,
    }
