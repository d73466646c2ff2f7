"""Byte ranges of a relay run as a Map: whole content-hash parts, covering the file exactly once."""

from __future__ import annotations

import pytest

from hycloud_core.content import PART_SIZE
from hycloud_core.relay import byte_ranges


@pytest.mark.parametrize(
    "size,limit", [(66 * 2**20, 8 * 2**20), (20 * 2**30, 4 * 2**30), (9 * 2**20, 3 * 2**20), (1, 2**20)]
)
def test_ranges_cover_the_file_in_whole_parts(size, limit):
    ranges = byte_ranges(size, limit)
    assert [r["index"] for r in ranges] == list(range(len(ranges)))
    assert ranges[0]["offset"] == 0 and sum(r["length"] for r in ranges) == size
    for a, b in zip(ranges, ranges[1:], strict=False):
        assert b["offset"] == a["offset"] + a["length"] and a["length"] % PART_SIZE == 0
    assert all(r["length"] <= max(limit, PART_SIZE) for r in ranges)


def test_a_20_gib_file_with_the_default_limit_is_five_ranges():
    assert len(byte_ranges(20 * 2**30, 4 * 2**30)) == 5
