"""bench/cost_bench.py's months: a real tree's sizes and ages, reads skewed to recent files."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

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
