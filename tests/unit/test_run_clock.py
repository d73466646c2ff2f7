"""`make test` reports each phase's wall time and how busy the CPUs were (infra/local/run_tests.py)."""

from __future__ import annotations

from pathlib import Path

from infra.local import run_tests


def test_each_phase_reports_the_busy_share_of_the_cpu_ticks_it_spanned(monkeypatch):
    ticks = iter([(100, 1000), (250, 1200), (250, 1400), (300, 1500)])  # at start, then per lap
    monkeypatch.setattr(run_tests, "cpu_ticks", lambda: next(ticks))
    clock = run_tests.Clock()
    clock.lap("busy")  # 150 of 200 ticks
    clock.lap("idle")  # 0 of 200
    clock.lap("since the last mark", restart=False)  # 50 of 100
    assert [(name, round(share, 2)) for name, _, share in clock.laps] == [
        ("busy", 0.75),
        ("idle", 0.0),
        ("since the last mark", 0.5),
    ]
    assert str(clock).startswith("phases: busy 0 s (CPU 75%), idle 0 s (CPU 0%)")


def test_cpu_ticks_reads_this_machine():
    busy, total = run_tests.cpu_ticks()
    assert 0 < busy <= total


def test_every_timing_test_lives_where_make_test_runs_them_alone():
    """The cloud-free phase skips `timing` tests; one outside TIMED would run in no phase at all."""
    root = Path(__file__).resolve().parents[2]
    marked = {
        path.relative_to(root)
        for folder in run_tests.CLOUD_FREE
        for path in (root / folder).rglob("test_*.py")
        if "pytest.mark." + "timing" in path.read_text()
    }
    assert marked, "no timing test found: the search is wrong"
    outside = [str(p) for p in marked if not any(p.is_relative_to(t) for t in run_tests.TIMED)]
    assert outside == []
