"""Amazon S3 Files prices: S3 storage and requests, file-system storage for small and recently
read data, and per-GB reads and writes metered at 32 KiB at least."""

from __future__ import annotations

import pytest

from hycloud_core.cost import Operations, load_prices, usage_from_sizes
from hycloud_core.cost import metering as m
from hycloud_core.cost.model import operations_cost, s3_files_cost

P = load_prices()
GiB, KiB, MiB = 1 << 30, 1 << 10, 1 << 20


def test_import_threshold_agrees_with_the_price_table():
    assert m.S3FILES_IMPORT_THRESHOLD == P["s3files_import_threshold_bytes"] == 128 * KiB


def test_small_files_pay_s3_and_file_system_storage_large_files_only_s3():
    usage = usage_from_sizes([100 * KiB] * 1024 + [128 * KiB] + [GiB], threshold=2 * MiB)
    cost = s3_files_cost(usage, P)
    small = 1024 * 100 * KiB  # 128 KiB itself is not under the threshold
    assert cost.billed_bytes == {"s3": usage.logical_bytes, "s3files_fs": small}
    assert cost.lines["s3_data"] == pytest.approx(usage.logical_bytes / GiB * 0.023)
    assert cost.lines["s3files_fs_data"] == pytest.approx(small / GiB * 0.30)


def test_recently_read_data_is_held_on_file_system_storage():
    usage = usage_from_sizes([GiB], threshold=2 * MiB)
    assert s3_files_cost(usage, P).lines["s3files_fs_data"] == 0
    assert s3_files_cost(usage, P, recently_read_bytes=GiB).lines["s3files_fs_data"] == pytest.approx(0.30)


def test_small_writes_are_metered_at_32_kib_each_and_exported_as_reads():
    # 1,000 files of 1 KiB: 1,000 x 32 KiB metered for the write and again for the export
    cost = operations_cost(Operations(small_uploads=1000, small_upload_bytes=1000 * KiB), P, "s3-files")
    metered_gb = 1000 * 32 * KiB / GiB
    assert cost["s3files_writes"] == pytest.approx(metered_gb * 0.06)
    assert cost["s3files_reads"] == pytest.approx(metered_gb * 0.03)
    assert cost["s3_put_requests"] == pytest.approx(1000 / 1000 * 0.005)


def test_a_large_read_is_streamed_from_the_bucket():
    cost = operations_cost(Operations(large_downloads=1, large_download_bytes=GiB), P, "s3-files")
    assert cost["s3files_writes"] == 0
    assert cost["s3files_reads"] == 0
    assert cost["s3_get_requests"] == pytest.approx(128 / 1000 * 0.0004)  # one GET per 8 MiB part
    assert cost["egress"] == pytest.approx(0.09)


def test_small_reads_need_no_import():
    cost = operations_cost(Operations(small_downloads=10, small_download_bytes=10 * 64 * KiB), P, "s3-files")
    assert cost["s3files_writes"] == 0
    assert cost["s3files_reads"] == pytest.approx(10 * 64 * KiB / GiB * 0.03)
