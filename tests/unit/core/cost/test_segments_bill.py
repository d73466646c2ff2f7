"""Packed cold small files in the month's bill (cost/segments_bill.py), against figures worked by
hand from prices.json (GB = 2^30 bytes): which files are packed, segment storage by band, the
EFS blocks saved, a PUT per segment written and a GET per read of a packed file."""

from __future__ import annotations

import pytest

from hycloud_core.cost import segments_bill, usage_from_sizes
from hycloud_core.cost.bill import FileMonth, Month, month_bills
from hycloud_core.cost.segments_bill import (
    LIVE_SHARE,
    packed_storage,
    segment_lines,
    with_lines,
)
from hycloud_core.cost.tiers import ColdShare, tiered_cost
from tests.unit.core.cost.worked import GiB, KiB, MiB, P

THRESHOLD = 2 * MiB

COLD = FileMonth(16 * KiB, before=60.0)  # packed all month, 60-90 days unread
READ = FileMonth(16 * KiB, before=60.0, reads=(5.0,))  # read on day 5: still packed, segment Frequent
REWRITTEN = FileMonth(16 * KiB, before=60.0, writes=(6.0,))  # back in EFS on day 6
TURNING = FileMonth(16 * KiB, before=10.0)  # 20 days in EFS, then packed: 10 days of 30-90
NOT_PACKED = [
    FileMonth(2 * KiB, before=100.0),  # one block: a stub saves nothing
    FileMonth(200 * KiB, before=100.0),  # 128 KiB and more: EFS IA is cheaper
    FileMonth(4 * MiB, before=100.0),  # a large file, in S3 already
]


def lines(files):
    return segment_lines(files, P, THRESHOLD, pack_after_days=30.0)  # the figures were worked for 30 days


def packed_month(f):
    return segments_bill.packed_month(f, pack_after_days=30.0)


def test_a_read_leaves_a_file_packed_and_a_write_puts_it_back_in_efs():
    read = packed_month(READ)
    assert read.band_days == [25.0, 5.0, 0.0, 0.0] and (read.gets, read.packs) == (1, 0)
    rewritten = packed_month(REWRITTEN)
    assert rewritten.band_days == [0.0, 6.0, 0.0, 0.0] and rewritten.gets == 0
    turning = packed_month(TURNING)
    assert turning.band_days == [0.0, 10.0, 0.0, 0.0] and turning.packs == 1
    assert sum(packed_month(FileMonth(16 * KiB, before=None, writes=(1.0,), reads=(2.0,))).band_days) == 0


def test_a_cold_small_file_is_in_a_segment_and_its_efs_blocks_are_saved():
    storage, requests = lines([COLD])
    band_price = (0.023 + 0.0125) / 2  # 30-90 days unread: half Frequent, half Infrequent
    assert storage["segment_data"] == pytest.approx(16 * KiB / LIVE_SHARE / GiB * band_price)
    assert storage["efs_data"] == pytest.approx(-12 * KiB / GiB * 0.30)  # 16 KiB of blocks, 4 KiB stub
    assert storage["segment_monitoring_data"] == pytest.approx(
        16 * KiB / LIVE_SHARE / (4 * MiB) * 0.0025 / 1000
    )
    assert requests["segment_gets"] == 0.0 and requests["segment_puts"] == 0.0  # packed before the month
    read, _ = lines([READ])  # 25 of its 30 days back in Frequent after the read
    frequent_after_read = 16 * KiB / LIVE_SHARE / GiB * (band_price * 5 / 30 + 0.023 * 25 / 30)
    assert read["segment_data"] == pytest.approx(frequent_after_read)
    assert read["efs_data"] == storage["efs_data"]  # packed all month all the same


def test_a_file_packed_during_the_month_pays_its_segment_put_and_a_third_of_the_month():
    storage, requests = lines([TURNING])
    assert storage["efs_data"] == pytest.approx(-12 * KiB / GiB * 0.30 / 3)
    assert requests["segment_puts"] == pytest.approx(0.005 / 1000)
    assert requests["segment_transitions"] == pytest.approx(0.01 / 1000)
    assert requests["segment_gets"] == 0.0


def test_rewrites_of_packed_files_pay_the_cleaners_compactions():
    """A 4 MiB segment is compacted at half live: 2 MiB dead cost one GET of it and the 2 MiB live
    copied into new segments, half a segment's PUT and transition."""
    rewritten = [REWRITTEN] * 128  # 128 x 16 KiB = 2 MiB dead
    assert packed_month(REWRITTEN).unpacks == 1 and packed_month(READ).unpacks == 0
    _, requests = lines(rewritten)
    assert requests["segment_compaction_gets"] == pytest.approx(1 * 0.0004 / 1000)
    assert requests["segment_compaction_puts"] == pytest.approx(0.5 * 0.005 / 1000)
    assert requests["segment_compaction_transitions"] == pytest.approx(0.5 * 0.01 / 1000)
    _, cold = lines([COLD, READ, TURNING])  # nothing rewritten: nothing to compact
    assert cold["segment_compaction_gets"] == cold["segment_compaction_puts"] == 0.0


def test_files_one_block_or_over_128_kib_or_large_are_not_packed():
    storage, requests = lines(NOT_PACKED)
    assert all(v == 0.0 for v in (*storage.values(), *requests.values()))


def test_the_tiered_bills_carry_segments_and_today_does_not():
    bills = month_bills(Month([READ, TURNING, *NOT_PACKED]), P, THRESHOLD)
    storage, _ = segment_lines([READ, TURNING], P, THRESHOLD)  # the deployment's 7 days, as the bill
    assert "segment_data" not in bills["hybrid"].lines["storage"]
    tiered = bills["hybrid-tiers"].lines
    assert tiered["storage"]["segment_data"] == pytest.approx(storage["segment_data"])
    assert tiered["requests"]["segment_gets"] == pytest.approx(0.0004 / 1000)
    unpacked = bills["hybrid"].lines["storage"]["efs_data"]
    assert tiered["storage"]["efs_data"] < unpacked  # the packed files' blocks left EFS


def test_a_size_mix_packs_its_cold_share_of_packable_files():
    cold = ColdShare(0.8, 0.5, 0.25)
    lines = packed_storage([16 * KiB, 2 * KiB, 200 * KiB, 4 * MiB], P, THRESHOLD, cold)
    band = [(0.023 + 0.0125) / 2, (0.0125 + 2 * 0.004) / 3, 0.004]
    price = 0.3 * band[0] + 0.25 * band[1] + 0.25 * band[2]
    assert lines["segment_data"] == pytest.approx(16 * KiB / LIVE_SHARE / GiB * price)
    assert lines["efs_data"] == pytest.approx(-12 * KiB * 0.8 / GiB * 0.30)
    tiered = with_lines(tiered_cost(usage_from_sizes([16 * KiB], THRESHOLD), P, cold), lines)
    assert tiered.lines["efs_data"] == pytest.approx((16 * KiB - 12 * KiB * 0.8) / GiB * 0.30)
