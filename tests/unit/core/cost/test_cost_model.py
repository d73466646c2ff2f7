"""Storage and operations cost of the hybrid layout against all-S3 and all-EFS (seed 000 Table II)."""

from __future__ import annotations

import random

import pytest

from hycloud_core.cost import Operations, compare, load_prices, usage_from_sizes
from hycloud_core.cost.model import operations_cost

KiB, MiB, GiB = 1024, 1024 * 1024, 1024**3
THRESHOLD = 2 * MiB
P = load_prices()


def gb_cost(nbytes: int, item: str) -> float:
    return nbytes / GiB * P[item]


def test_tiny_files_cost_six_kib_each_in_efs():
    usage = usage_from_sizes([100] * 1000, THRESHOLD, dirs=1)
    costs = compare(usage, P)
    efs_expected = gb_cost(1000 * 6 * KiB + 6 * KiB, "efs_storage_gb_month")
    assert costs["hybrid"].lines["efs_data"] + costs["hybrid"].lines["efs_metadata"] == pytest.approx(
        efs_expected
    )
    assert costs["all-efs"].total == pytest.approx(efs_expected)
    assert costs["all-s3"].total == pytest.approx(gb_cost(100_000, "s3_storage_gb_month"))
    # bytes in S3 are 60x cheaper than 6 KiB blocks in EFS for 100-byte files
    assert costs["all-s3"].total < costs["hybrid"].total / 50


def table_two_sizes(seed: int = 7) -> list[int]:
    """Many small files and a few large ones, log-uniform like a user file trace."""
    rng = random.Random(seed)
    small = [int(2 ** rng.uniform(10, 19)) for _ in range(9000)]  # 1 KiB .. 512 KiB
    large = [int(2 ** rng.uniform(21, 32)) for _ in range(1000)]  # 2 MiB .. 4 GiB
    return small + large


def test_table_two_hybrid_close_to_s3_and_far_below_efs():
    sizes = table_two_sizes()
    usage = usage_from_sizes(sizes, THRESHOLD, dirs=100)
    assert usage.files == len(sizes) and usage.logical_bytes == sum(sizes)
    costs = compare(usage, P)
    hybrid, s3, efs = (costs[k].unit_price(P) for k in ("hybrid", "all-s3", "all-efs"))
    assert s3 == pytest.approx(P["s3_storage_gb_month"])
    assert efs >= P["efs_storage_gb_month"]  # rounding to blocks only adds
    assert s3 < hybrid < 1.05 * s3 and hybrid < efs / 10


def test_hybrid_minus_all_s3_is_exactly_the_small_files_moved_to_efs():
    sizes = table_two_sizes(seed=3)
    usage = usage_from_sizes(sizes, THRESHOLD, dirs=10)
    costs = compare(usage, P)
    small_bytes = sum(s for s in sizes if s < THRESHOLD)
    efs_part = costs["hybrid"].lines["efs_data"] + costs["hybrid"].lines["efs_metadata"]
    difference = (
        efs_part + costs["hybrid"].lines["dynamodb_metadata"] - gb_cost(small_bytes, "s3_storage_gb_month")
    )
    assert costs["hybrid"].total - costs["all-s3"].total == pytest.approx(difference)


def test_dedup_is_billed_once_in_hybrid_and_per_copy_in_all_s3():
    from hycloud_core.cost import UsageBuilder

    b = UsageBuilder(user="u")
    b.add_dir()
    for path in ("/a", "/b", "/c"):
        b.add_large(GiB, "same", 200, path)
    usage = b.build()
    assert (usage.s3_objects, usage.s3_bytes, usage.s3_logical_bytes, usage.dedup_saved_bytes) == (
        1,
        GiB,
        3 * GiB,
        2 * GiB,
    )
    costs = compare(usage, P)
    assert costs["hybrid"].lines["s3_data"] == pytest.approx(P["s3_storage_gb_month"])
    assert costs["all-s3"].total == pytest.approx(3 * P["s3_storage_gb_month"])


def test_relayed_download_pays_efs_write_and_read_on_top_of_egress():
    ops = Operations(large_downloads=1, large_download_bytes=GiB)
    hybrid = operations_cost(ops, P, "hybrid")
    s3 = operations_cost(ops, P, "all-s3")
    assert hybrid["egress"] == s3["egress"] == pytest.approx(P["egress_internet_gb"])
    assert hybrid["efs_writes"] + hybrid["efs_reads"] == pytest.approx(
        P["efs_elastic_write_gb"] + P["efs_elastic_read_gb"]
    )
    assert hybrid["step_functions"] == pytest.approx(6 / 1000 * P["sfn_per_1000_transitions"])
    assert sum(hybrid.values()) > sum(s3.values())


def test_large_upload_counts_one_put_per_part_plus_initiate_and_complete():
    ops = Operations(large_uploads=1, large_upload_bytes=100 * MiB)  # 13 parts of 8 MiB
    assert operations_cost(ops, P, "hybrid")["s3_put_requests"] == pytest.approx(
        15 / 1000 * P["s3_put_per_1000"]
    )
    assert operations_cost(ops, P, "all-s3")["s3_put_requests"] == pytest.approx(
        15 / 1000 * P["s3_put_per_1000"]
    )
    with pytest.raises(ValueError, match="layout"):
        operations_cost(ops, P, "tape")


def test_empty_namespace_has_no_unit_price():
    costs = compare(usage_from_sizes([], THRESHOLD), P)
    assert costs["all-s3"].total == 0 and costs["hybrid"].unit_price(P) is None
