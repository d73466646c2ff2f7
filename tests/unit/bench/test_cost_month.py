"""bench/cost_bench.py's months: a real tree's sizes and ages, reads skewed to recent files."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench"))

import cost_bench  # noqa: E402


def test_tree_files_reads_sizes_and_ages(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "old.txt").write_bytes(b"x" * 100)
    (tmp_path / "sub" / "new.txt").write_bytes(b"y" * 10)
    (tmp_path / "empty").write_bytes(b"")  # empty files hold nothing to bill
    day = 86400
    os.utime(tmp_path / "old.txt", (time.time() - 400 * day,) * 2)
    found = sorted(cost_bench.tree_files(tmp_path))
    assert [s for s, _ in found] == [10, 100]
    assert found[0][1] < 1 and 399.9 < found[1][1] < 400.1


def test_trace_month_reads_recent_files_more_and_adds_new_ones():
    tree = [(1000, 0.0)] * 2000 + [(1000, 730.0)] * 2000
    month = cost_bench.trace_month(tree, seed=1)
    young = month.files[:2000]
    old = month.files[2000:4000]
    added = month.files[4000:]
    mean = lambda files: sum(len(f.reads) for f in files) / len(files)  # noqa: E731
    assert 1.8 < mean(young) < 2.2  # 2 x 30 / 30
    assert 0.05 < mean(old) < 0.12  # 2 x 30 / 760 = 0.079
    assert len(added) == 120 and all(f.before is None and len(f.writes) == 1 for f in added)
    assert all(all(d > f.writes[0] for d in f.reads) for f in added)  # read only after written
    assert month.metadata_ops == sum(len(f.reads) + len(f.writes) for f in month.files)


def test_synthetic_month_follows_the_unread_share():
    month = cost_bench.synthetic_month([1 << 20] * 20000, seed=1)
    unread_a_month = sum(1 for f in month.files if f.before > 30) / 20000
    assert 0.78 < unread_a_month < 0.82
    assert 0.18 < sum(1 for f in month.files if f.reads) / 20000 < 0.22


def test_where_it_goes_splits_efs_by_what_holds_it_and_prices_the_floors():
    """The EFS parts add up to the bill's EFS lines; the floor of the names is 6 KiB of EFS
    Standard per file and per folder."""
    from hycloud_core.cost import load_prices
    from hycloud_core.cost.bill import FileMonth, Month, month_bills

    prices = load_prices()
    files = [FileMonth(1000, 400.0)] * 50 + [FileMonth(20_000, 400.0)] * 30 + [FileMonth(20_000, 1.0)] * 20
    month = Month(files, dirs=2, metadata_ops=10)
    bills = {k: b.to_dict(prices) for k, b in month_bills(month, prices).items()}
    w = cost_bench.where_it_goes(month, prices, bills)
    storage = bills["hybrid-tiers-mix"]["lines"]["storage"]
    assert sum(w["efs"].values()) == pytest.approx(storage["efs_metadata"] + storage["efs_data"])
    gb, std = prices.gb, prices["efs_storage_gb_month"]
    assert (
        w["efs"]["files of one 4 KiB block (EFS Standard: a stub would cost the same)"] == gb(50 * 4096) * std
    )
    assert w["floor_efs_names"] == pytest.approx(gb(100 * 6144) * std + gb(2 * 6144) * std)
    assert w["total"] == sum(v for g, v in bills["hybrid-tiers-mix"]["groups"].items() if g != "transfer")
