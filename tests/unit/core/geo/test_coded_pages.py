"""Checking many blocks within one request's budget, and the running hash of verified pages."""

from __future__ import annotations

import os
import time

from hycloud_core.codec.layout import Block
from hycloud_core.fs import coded
from hycloud_core.fs.blocks import ABSENT, STORED
from hycloud_core.fs.coded import HEADS_IN_FLIGHT, CodedFiles, _chained


def _blocks(n: int) -> list[Block]:
    return [Block(os.urandom(32).hex(), 1000 + i, "us-east-1") for i in range(n)]


class SlowStore:
    """A HEAD takes `delay_s`; every block with an even size is stored."""

    def __init__(self, delay_s: float, carried: tuple[str, ...] = ()) -> None:
        self.delay_s, self.carried_regions, self.calls = delay_s, carried, []

    def s3_for(self, region: str) -> object:
        return object()

    def carried(self, region: str) -> bool:
        return region in self.carried_regions

    def state(self, region: str, block_hash: str, size: int) -> str:
        time.sleep(self.delay_s)
        return STORED if size % 2 == 0 else ABSENT

    def states(self, region: str, blocks: list[tuple[str, int]]) -> list[str]:
        """A carried region answers a whole batch in one call, as the reach function does."""
        self.calls.append((region, len(blocks)))
        time.sleep(self.delay_s)
        return [STORED if size % 2 == 0 else ABSENT for _, size in blocks]


def _files(store: SlowStore) -> CodedFiles:
    files = object.__new__(CodedFiles)
    files.blocks = store
    return files


def test_the_running_hash_does_not_depend_on_the_pages():
    blocks = _blocks(25)
    whole = _chained("", blocks)
    assert whole == _chained(_chained(_chained("", blocks[:7]), blocks[7:20]), blocks[20:])
    assert whole != _chained("", blocks[:24]) and whole != _chained("", blocks[1:] + blocks[:1])


def test_blocks_not_asked_within_the_budget_are_a_tail_of_none():
    blocks = _blocks(200)
    started = time.monotonic()
    stored = _files(SlowStore(0.02))._stored(blocks, 0.1)
    assert time.monotonic() - started < 1.0  # 200 HEADs of 20 ms in a row would be 4 s
    asked = stored.index(None)
    assert HEADS_IN_FLIGHT <= asked < len(blocks) and set(stored[asked:]) == {None}
    assert stored[:asked] == [b.size % 2 == 0 for b in blocks[:asked]]


def test_with_time_enough_every_block_is_asked_in_parallel():
    blocks = _blocks(40)
    started = time.monotonic()
    stored = _files(SlowStore(0.02))._stored(blocks, coded.CHECK_BUDGET_S)
    assert stored == [b.size % 2 == 0 for b in blocks]
    assert time.monotonic() - started < 40 * 0.02 / 2  # not one after another


def test_another_regions_blocks_are_asked_a_batch_per_call_of_the_reach_function():
    blocks = [
        Block(b.hash, b.size, "eu-west-1" if i % 3 else "us-east-1") for i, b in enumerate(_blocks(700))
    ]
    store = SlowStore(0.02, carried=("eu-west-1",))
    stored = _files(store)._stored(blocks, coded.CHECK_BUDGET_S)
    assert stored == [b.size % 2 == 0 for b in blocks]
    remote = sum(b.instance == "eu-west-1" for b in blocks)
    batched = [n for region, n in store.calls if region == "eu-west-1"]
    assert sum(batched) == remote and len(batched) == -(-remote // coded.BATCH)
