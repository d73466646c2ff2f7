"""The month's bill: each file's unread days by band, its tier moves and cold reads, and the
groups of every layout, against figures worked by hand from prices.json (GB = 2^30 bytes)."""

from __future__ import annotations

import pytest

from hycloud_core.cost import load_prices
from hycloud_core.cost.bill import FileMonth, Month, month_bills, timeline

P = load_prices()
KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30


def test_an_untouched_file_crosses_into_ia_inside_the_month():
    t = timeline(FileMonth(MiB, before=20.0))  # unread 20 .. 50 days: 10 in Standard, 20 past 30
    assert t.band_days == [10.0, 20.0, 0.0, 0.0]
    assert t.crossed == [0, 1, 0, 0] and t.read_in_band == [0, 0, 0, 0]


def test_a_read_in_archive_pays_the_rest_of_its_90_days_and_resets_the_timer():
    # unread 175 .. 185 before the read on day 10: 5 days in IA, crosses into Archive, read there
    t = timeline(FileMonth(MiB, before=175.0, reads=(10.0,)))
    assert t.band_days == [20.0, 0.0, 5.0, 5.0]
    assert t.crossed == [0, 0, 0, 1] and t.read_in_band == [0, 0, 0, 1]
    assert t.archive_early_days == 85.0  # 5 of Archive's 90 days used


def test_a_new_file_exists_from_its_first_write():
    t = timeline(FileMonth(MiB, before=None, writes=(5.0,), reads=(6.0,)))
    assert t.band_days == [25.0, 0.0, 0.0, 0.0] and t.read_in_band == [1, 0, 0, 0]


def _month() -> Month:
    # a 1 MiB file (EFS at 2 MiB) read on day 10 after 175 days, a 16 MiB file (S3) unread 100 days,
    # a 64 KiB file (never tiered) written on day 0
    return Month(
        [
            FileMonth(MiB, before=175.0, reads=(10.0,)),
            FileMonth(16 * MiB, before=100.0),
            FileMonth(64 * KiB, before=None, writes=(0.0,)),
        ]
    )


def test_tier_lines_of_hybrid_with_tiers():
    bill = month_bills(_month(), P)["hybrid-tiers"]
    req = bill.lines["requests"]
    assert req["efs_tiering"] * GiB == pytest.approx(MiB * 0.03)  # into Archive once
    assert req["efs_cold_reads"] * GiB == pytest.approx(MiB * 0.03)  # a read from Archive
    assert req["efs_archive_minimum"] * GiB == pytest.approx(MiB * 85 / 30 * 0.008)
    assert req["s3_transitions"] == 0  # nothing large written this month
    # storage: the 1 MiB file 20 days Standard, 5 IA, 5 Archive; the 16 MiB object all month Archive Instant
    s = bill.lines["storage"]
    # the 64 KiB file is packed after 7 days unread: its stub's 4 KiB block stays in EFS for 23
    efs_mib = (20 * 0.30 + 5 * 0.016 + 5 * 0.008) / 30 + (64 * KiB * 7 + 4 * KiB * 23) / 30 / MiB * 0.30
    assert s["efs_data"] * GiB == pytest.approx(efs_mib * MiB)
    assert s["s3_data"] * GiB == pytest.approx(16 * MiB * 0.004)
    assert s["s3_monitoring_data"] == pytest.approx(0.0025 / 1000)


def test_every_layout_bills_the_same_egress_and_the_unit_price_leaves_it_out():
    bills = month_bills(_month(), P)
    egress = MiB / GiB * 0.09
    for bill in bills.values():
        assert bill.group("transfer") == pytest.approx(egress)
        assert bill.unit_price(P) * (17 * MiB + 64 * KiB) / GiB == pytest.approx(bill.total - egress)
    plain = bills["all-s3"]
    assert plain.group("storage") == pytest.approx((17 * MiB + 64 * KiB) / GiB * 0.023)
    assert plain.lines["requests"]["s3_put_requests"] == pytest.approx(0.005 / 1000)
    assert plain.lines["requests"]["s3_get_requests"] == pytest.approx(0.0004 / 1000)
    # S3 Files: the small file on file-system storage; its write metered and exported
    files = bills["s3-files"]
    assert files.lines["storage"]["s3files_fs_data"] * GiB == pytest.approx(64 * KiB * 0.30)


def test_hybrid_today_pays_its_direct_download_through_one_controller_call():
    bill = month_bills(_month(), P)["hybrid"]
    assert "efs_tiering" not in bill.lines["requests"]
    # the small read and the small write through the API: two calls, no relay
    assert bill.lines["requests"]["apigw_requests"] == pytest.approx(2 / 1e6 * 3.5)
    assert bill.lines["compute"]["step_functions"] == 0


def test_the_threshold_per_mix_is_the_candidate_with_the_lowest_bill():
    """Every candidate is priced on the month's files, the cheapest is taken, and its bill is never
    above HyCloud with tiers at the fixed 2 MiB."""
    from hycloud_core.cost.bill import CANDIDATE_THRESHOLDS, Assumptions, cheapest_threshold

    month = _month()
    bills = month_bills(month, P)
    walked, a = month.walked(), Assumptions(relayed_share=0.0)
    mix = bills["hybrid-tiers-mix"]
    assert mix.threshold == cheapest_threshold(walked, month, P, a) and mix.threshold in CANDIDATE_THRESHOLDS
    cost = {t: month_bills(month, P, threshold=t)["hybrid-tiers"] for t in CANDIDATE_THRESHOLDS}
    least = min(b.total - b.group("transfer") for b in cost.values())
    assert mix.total - mix.group("transfer") == pytest.approx(least)
    assert mix.total <= bills["hybrid-tiers"].total
