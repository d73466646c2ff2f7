"""Storage by tier and the small-file threshold chosen by cost, against figures worked by hand
from prices.json (GB = 2^30 bytes; amounts below are USD x 2^30, i.e. bytes x $/GB)."""

from __future__ import annotations

import math

import pytest

from hycloud_core.cost import usage_from_sizes
from hycloud_core.cost.tiers import (
    ColdShare,
    FileAccess,
    choose_threshold,
    efs_file_month,
    efs_tiered_gb_month,
    s3_file_month,
    s3_tiered_gb_month,
    tiered_cost,
)
from tests.unit.core.cost.worked import GiB, KiB, MiB, P

ALL_COLD = ColdShare(1.0, 1.0, 1.0, months_held=math.inf)


def test_storage_alone_puts_a_file_in_s3_once_it_needs_a_second_efs_block():
    # EFS: 2 KiB inode + 4 KiB blocks at 0.30. S3: the link file (2 KiB + 4 KiB at 0.30 = 1843.2),
    # its object record (300 B at 0.25 = 75) and the data at 0.023. At 4096 bytes EFS costs
    # 1843.2 against 2012.4; at 4097 EFS meters a second block: 3072 against 2012.4.
    access = FileAccess(reads_per_month=0, writes_per_month=0, cold=ColdShare.none())
    assert efs_file_month(4096, P, access) * GiB == pytest.approx(1843.2)
    assert s3_file_month(4096, P, access) * GiB == pytest.approx(1843.2 + 75 + 4096 * 0.023)
    assert choose_threshold(P, access) == 4097


def test_a_monthly_rewrite_pays_the_put_until_four_efs_blocks():
    # EFS - S3 = 0.30 x blocks + (0.06 - 0.023) s - 1228.8 - 75 - 0.000005 x 2^30 (5368.709):
    # at 16384 (4 blocks) 4915.2 + 606.2 < 6672.5; at 16385 (5 blocks) 6144 + 606.2 > 6672.5.
    access = FileAccess(reads_per_month=0, writes_per_month=1, cold=ColdShare.none())
    assert choose_threshold(P, access) == 16385


def test_frequent_reads_move_the_crossover_inside_a_block():
    # 100 reads a month: EFS - S3 = 0.30 x blocks + (3.00 - 0.023) s - 1303.8 - 100 x 429.4967.
    # In the fourth block (12289..16384): 4915.2 + 2.977 s >= 44253.47 from s = 13215.
    access = FileAccess(reads_per_month=100, writes_per_month=0, cold=ColdShare.none())
    assert choose_threshold(P, access) == 13215


def test_threshold_is_exactly_the_crossover_for_the_default_access():
    access = FileAccess()
    t = choose_threshold(P, access)
    assert efs_file_month(t - 1, P, access) < s3_file_month(t - 1, P, access)
    assert efs_file_month(t, P, access) >= s3_file_month(t, P, access)


def test_tier_prices_blend_by_the_cold_shares():
    # default: 80% unread 30 days, 51.2% 90 days, 26.2144% 180 days, moves spread over 12 months
    efs = 0.2 * 0.30 + 0.537856 * 0.016 + 0.262144 * 0.008
    efs += (0.8 * 0.01 + 0.262144 * 0.03 + 0.537856 * 0.01 + 0.262144 * 0.03) / 12
    assert efs_tiered_gb_month(P, ColdShare()) == pytest.approx(efs)
    s3 = 0.2 * 0.023 + 0.288 * 0.0125 + 0.512 * 0.004
    assert s3_tiered_gb_month(P, ColdShare()) == pytest.approx(s3)
    assert efs_tiered_gb_month(P, ColdShare.none()) == pytest.approx(0.30)
    assert s3_tiered_gb_month(P, ColdShare.none()) == pytest.approx(0.023)


def test_tiered_storage_leaves_small_files_and_metadata_in_standard():
    usage = usage_from_sizes([MiB, 64 * KiB, 16 * MiB], threshold=2 * MiB, dirs=1)
    assert (usage.efs_tierable_files, usage.efs_tierable_data_bytes) == (1, MiB)
    assert (usage.s3_tierable_objects, usage.s3_tierable_bytes) == (1, 16 * MiB)
    cost = tiered_cost(usage, P, ALL_COLD)
    assert cost.lines["efs_data"] * GiB == pytest.approx(MiB * 0.008 + 64 * KiB * 0.30)
    # two inodes, one link file (inode + block), one directory (inode + block)
    assert cost.lines["efs_metadata"] * GiB == pytest.approx((2 * 2 + 6 + 6) * KiB * 0.30)
    assert cost.lines["s3_data"] * GiB == pytest.approx(16 * MiB * 0.004)
    assert cost.lines["s3_monitoring_data"] == pytest.approx(0.0025 / 1000)
    assert cost.lines["dynamodb_metadata"] * GiB == pytest.approx(usage.record_bytes * 0.25)


def test_nothing_cold_costs_the_untiered_layout_plus_monitoring():
    from hycloud_core.cost import monthly_cost

    usage = usage_from_sizes([MiB, 64 * KiB, 16 * MiB, 3 * GiB], threshold=2 * MiB)
    plain = monthly_cost(usage, P)
    tiered = tiered_cost(usage, P, ColdShare(0.0, 0.0, 0.0, months_held=math.inf))
    assert tiered.total == pytest.approx(plain.total + 2 * 0.0025 / 1000)


def test_cold_files_of_128_kib_and_more_stay_cheaper_in_efs_archive_up_to_the_last_crossover():
    # All cold, no access. Under 128 KiB nothing tiers: EFS pays 0.30 per block, S3 a link file,
    # a record and 0.023 per byte, so S3 is cheaper from 4097 .. 131071 (at 131071: +35003.2).
    # From 128 KiB EFS data is in Archive (0.008) and S3 in Archive Instant (0.004) plus monitoring
    # (0.0025 / 1000 = 2684.35): EFS - S3 = 32.768 b - 0.004 s - 3988.15 for b blocks of s bytes,
    # negative at 131072 (-3463.9). Inside a block it falls with s; at a block's end it is
    # 16.384 b - 3988.15, never negative from b = 244 on. Block 243 ends cheaper in EFS (995328:
    # -6.84), so the threshold is 995329, though 991233 .. 993617 already cost a little more in EFS.
    access = FileAccess(reads_per_month=0, writes_per_month=0, cold=ALL_COLD)
    assert (efs_file_month(131071, P, access) - s3_file_month(131071, P, access)) * GiB == pytest.approx(
        35003.17, abs=0.01
    )
    assert (efs_file_month(131072, P, access) - s3_file_month(131072, P, access)) * GiB == pytest.approx(
        -3463.87, abs=0.01
    )
    assert efs_file_month(995328, P, access) < s3_file_month(995328, P, access)
    assert efs_file_month(993617, P, access) > s3_file_month(993617, P, access)
    assert choose_threshold(P, access) == 995329


def test_efs_cheaper_everywhere_leaves_every_file_small():
    # all cold and untouched, EFS is cheaper at 900,000 bytes (block 220: 7208.96 - 3600 - 3988.15 < 0)
    access = FileAccess(reads_per_month=0, writes_per_month=0, cold=ALL_COLD)
    assert choose_threshold(P, access, largest=900_000) == 900_001
