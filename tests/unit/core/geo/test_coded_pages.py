"""Checking many blocks within one request's budget, and the running hash of verified pages."""

from __future__ import annotations

import os
import time

from hycloud_core.coded_layout import Block
from hycloud_core.fs import coded
from hycloud_core.fs.blocks import ABSENT, STORED
from hycloud_core.fs.coded import HEADS_IN_FLIGHT, CodedFiles, _chained


def _blocks(n: int) -> list[Block]:
    return [Block(os.urandom(32).hex(), 1000 + i, "us-east-1") for i in range(n)]


class SlowStore:
    """A HEAD takes `delay_s`; every block with an even size is stored."""

    def __init__(self, delay_s: float) -> None:
        self.delay_s = delay_s

    def s3_for(self, region: str) -> object:
        return object()

    def state(self, region: str, block_hash: str, size: int) -> str:
        time.sleep(self.delay_s)
        return STORED if size % 2 == 0 else ABSENT


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
