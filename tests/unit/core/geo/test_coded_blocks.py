"""Coded layouts, repair, ring migration and the multi-source fetcher over an in-memory block store."""

from __future__ import annotations

import hashlib
import io
import os
import time
from collections import deque

import pytest
import requests

from hycloud.transfer.coded import Fetcher, plan_queues
from hycloud_core import content
from hycloud_core.codec.erasure import decode_chunk, encode_stream
from hycloud_core.codec.layout import Block, Chunk, CodedLayout, placed
from hycloud_core.coded.migration import migrate_layout
from hycloud_core.coded.reassemble import reassemble
from hycloud_core.coded.repair import repair_file
from hycloud_core.errors import BadRequestError
from hycloud_core.fs.blocks import ABSENT, STORED

MiB = 1024 * 1024
REGIONS = ["us-east-1", "us-west-2", "eu-west-1"]


class MemoryStore:
    """BlockStore's interface over a dict: (region, hash) -> bytes."""

    def __init__(self, regions: list[str]) -> None:
        self.buckets = {r: f"bucket-{r}" for r in regions}
        self.blobs: dict[tuple[str, str], bytes] = {}

    @property
    def regions(self) -> list[str]:
        return list(self.buckets)

    def has(self, region: str, block_hash: str, size: int) -> bool:
        data = self.blobs.get((region, block_hash))
        return data is not None and len(data) == size and hashlib.sha256(data).hexdigest() == block_hash

    def verified(self, region: str, block_hash: str, size: int) -> bool:
        return self.has(region, block_hash, size)  # no metadata apart from the bytes here

    def get(self, region: str, block_hash: str) -> bytes | None:
        return self.blobs.get((region, block_hash))

    def get_many(self, region: str, blocks: list[tuple[str, int]]) -> list[bytes | None]:
        return [self.get(region, h) for h, _ in blocks]

    def states(self, region: str, blocks: list[tuple[str, int]]) -> list[str]:
        return [STORED if self.has(region, h, size) else ABSENT for h, size in blocks]

    def s3_for(self, region: str) -> None:
        return None

    def put(self, region: str, block_hash: str, data: bytes) -> None:
        assert region in self.buckets
        self.blobs[(region, block_hash)] = data

    def delete_many(self, region: str, block_hashes: list[str]) -> None:
        for block_hash in block_hashes:
            self.blobs.pop((region, block_hash), None)


class CountingStore(MemoryStore):
    def __init__(self, regions: list[str]) -> None:
        super().__init__(regions)
        self.reads: list[tuple[str, str]] = []

    def get(self, region: str, block_hash: str) -> bytes | None:
        self.reads.append((region, block_hash))
        return super().get(region, block_hash)


def _coded(data: bytes, regions: list[str], n: int = 3, k: int = 2) -> tuple[CodedLayout, dict]:
    chunks, blocks = [], {}
    for chunk in encode_stream(io.BytesIO(data), n, k, 1 * MiB):
        hashes = [hashlib.sha256(b).hexdigest() for b in chunk.blocks]
        blocks.update(zip(hashes, chunk.blocks, strict=True))
        chunks.append(
            Chunk(
                chunk.length, chunk.key, [Block(h, len(b)) for h, b in zip(hashes, chunk.blocks, strict=True)]
            )
        )
    return placed(CodedLayout(n, k, 1 * MiB, chunks), len(data), regions), blocks


def _stored(layout: CodedLayout, blocks: dict, regions: list[str]) -> MemoryStore:
    store = MemoryStore(regions)
    for chunk in layout.chunks:
        for b in chunk.blocks:
            store.put(b.instance, b.hash, blocks[b.hash])
    return store


def test_layout_checks_code_and_lengths():
    layout, _ = _coded(os.urandom(3 * MiB + 5), REGIONS)
    assert [len({b.instance for b in c.blocks}) for c in layout.chunks] == [3] * 4
    with pytest.raises(BadRequestError):
        placed(layout, layout.size + 1, REGIONS)
    with pytest.raises(BadRequestError):
        placed(_coded(os.urandom(MiB), REGIONS[:2] + ["x"], 3, 1)[0], MiB, REGIONS)
    small, _ = _coded(os.urandom(MiB), REGIONS)
    with pytest.raises(BadRequestError):  # three blocks cannot go on two instances
        placed(small, MiB, REGIONS[:2])


def test_repair_rebuilds_only_lost_blocks_byte_exact():
    layout, blocks = _coded(os.urandom(4 * MiB), REGIONS)
    store = _stored(layout, blocks, REGIONS)
    lost = [(r, h) for (r, h) in store.blobs if r == "us-west-2"]
    for key in lost:
        del store.blobs[key]
    count = repair_file(layout, "us-west-2", store)
    assert count.rebuilt == count.checked == len(lost) and count.unrecoverable == 0
    assert all(store.blobs[key] == blocks[key[1]] for key in lost)


def test_adding_a_fourth_instance_moves_only_what_the_ring_moves():
    layout, blocks = _coded(os.urandom(40 * MiB), REGIONS)
    store = _stored(layout, blocks, REGIONS + ["ap-south-1"])
    before = [[b.instance for b in c.blocks] for c in layout.chunks]
    result = migrate_layout(layout, REGIONS + ["ap-south-1"], store)
    after = [[b.instance for b in c.blocks] for c in layout.chunks]
    changed = [
        (x, y)
        for old, new in zip(before, after, strict=True)
        for x, y in zip(old, new, strict=True)
        if x != y
    ]
    assert result.moved == len(changed) > 0 and result.kept == 3 * len(layout.chunks) - len(changed)
    assert all(y == "ap-south-1" for _, y in changed)  # blocks only go to the new instance
    assert len(changed) < 3 * len(layout.chunks) / 2  # about 1/4 of 3 blocks per chunk move
    for chunk in layout.chunks:
        for b in chunk.blocks:
            assert store.blobs[(b.instance, b.hash)] == blocks[b.hash]
    assert len(result.stale) == result.moved


def test_reassembly_reads_its_own_region_first_and_survives_a_lost_block():
    data = os.urandom(3 * MiB + 17)
    layout, blocks = _coded(data, REGIONS)
    store = CountingStore(REGIONS)
    for chunk in layout.chunks:
        for b in chunk.blocks:
            store.put(b.instance, b.hash, blocks[b.hash])
    (lost,) = [b for b in layout.chunks[-1].blocks if b.instance == "eu-west-1"]  # its own: damaged
    store.blobs[(lost.instance, lost.hash)] = b"damaged"
    out = io.BytesIO()
    content_hash, size = reassemble(layout, store, "eu-west-1", out)
    assert out.getvalue() == data and size == len(data)
    assert content_hash == content.hash_bytes(data)
    for chunk in layout.chunks:  # k = 2 reads a chunk: its own block and one other
        (own,) = [b for b in chunk.blocks if b.instance == "eu-west-1"]
        assert ("eu-west-1", own.hash) in store.reads
    assert len(store.reads) == 2 * len(layout.chunks) + 1  # the damaged one, then two others


def _fetcher(layout, blocks, get_delay, fail=(), rebalance=True, queues=None):
    urls = {
        f"{ci}/{bi}": f"{b.instance}|{b.hash}"
        for ci, c in enumerate(layout.chunks)
        for bi, b in enumerate(c.blocks)
    }

    class Answer:
        status_code = 200

        def __init__(self, body):
            self.content = body
            self.elapsed = __import__("datetime").timedelta(seconds=0.001)

    def get(region, url):
        if region in fail:
            raise requests.ConnectionError("refused")
        time.sleep(get_delay.get(region, 0.0))
        return Answer(blocks[url.split("|")[1]])

    queues = queues or plan_queues(layout, {})[0]
    return Fetcher(layout, urls, {r: deque(q) for r, q in queues.items()}, get, rebalance)


def _run(fetcher, layout) -> bytes:
    out = {}

    def keep(ci, got):
        out[ci] = decode_chunk(got)

    fetcher.start(keep, 2)
    fetcher.wait()
    assert fetcher.error in (None, "")
    return b"".join(out[i] for i in range(len(layout.chunks)))


def test_fetcher_survives_an_unreachable_instance():
    data = os.urandom(6 * MiB)
    layout, blocks = _coded(data, REGIONS)
    fetcher = _fetcher(layout, blocks, {}, fail={"eu-west-1"})
    assert _run(fetcher, layout) == data
    assert fetcher.dead == {"eu-west-1"} and fetcher.stats["eu-west-1"].blocks == 0


def test_fetcher_moves_a_slow_instances_blocks():
    data = os.urandom(8 * MiB)
    layout, blocks = _coded(data, REGIONS)
    fetcher = _fetcher(layout, blocks, {"us-west-2": 5.0, "us-east-1": 0.01, "eu-west-1": 0.01})
    started = time.monotonic()
    assert _run(fetcher, layout) == data
    assert time.monotonic() - started < 5.0  # nobody waited for the slow instance
    assert fetcher.stats["us-west-2"].blocks == 0 and fetcher.moved >= 1


def test_fetcher_fails_when_two_instances_are_lost():
    layout, blocks = _coded(os.urandom(2 * MiB), REGIONS)
    fetcher = _fetcher(layout, blocks, {}, fail={"eu-west-1", "us-west-2"})
    fetcher.start(lambda ci, got: None, 2)
    fetcher.wait()
    assert fetcher.error and fetcher.written == 0


def test_an_instance_the_plan_leaves_out_only_stands_in_for_failures():
    """RS(4,2) on four instances, the plan on three: the fourth takes no queued block from the
    busy others; with one of them lost the download still completes."""
    regions = [*REGIONS, "ap-south-1"]
    data = os.urandom(8 * MiB)
    layout, blocks = _coded(data, regions, n=4, k=2)
    setup = {r: 0.0 for r in REGIONS} | {"ap-south-1": 100.0}  # far too slow to start
    queues, _ = plan_queues(layout, {r: 1e8 for r in regions}, setup)
    assert not queues["ap-south-1"] and all(queues[r] for r in REGIONS)
    healthy = _fetcher(layout, blocks, {r: 0.05 for r in REGIONS}, queues=queues)
    assert _run(healthy, layout) == data
    assert healthy.stats["ap-south-1"].blocks == 0
    one_lost = _fetcher(layout, blocks, {}, fail={"us-east-1"}, queues=queues)
    assert _run(one_lost, layout) == data
    assert one_lost.dead == {"us-east-1"}


def test_a_slow_instance_does_not_take_the_last_blocks_of_fast_ones():
    """Planned on the links' speeds, the slow instance serves what the plan gives it and no
    more: a block it took from a fast instance's queue would arrive last."""
    data = os.urandom(16 * MiB)
    layout, blocks = _coded(data, REGIONS)
    rates = {"us-east-1": 1e8, "us-west-2": 1e8, "eu-west-1": 1e7}
    queues, _ = plan_queues(layout, rates)
    planned = len(queues["eu-west-1"])
    delays = {"us-east-1": 0.02, "us-west-2": 0.02, "eu-west-1": 0.2}
    fetcher = _fetcher(layout, blocks, delays, queues=queues)
    assert _run(fetcher, layout) == data
    assert fetcher.stats["eu-west-1"].blocks <= planned
