"""`make test` reports each phase's wall time and how busy the CPUs were (infra/local/run_tests.py)."""

from __future__ import annotations

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
