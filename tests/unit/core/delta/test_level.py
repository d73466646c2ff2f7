"""The zstd level of a version-aware delta by eq. 2, and the cloud's cap on it (level.py).

The expected levels are worked by hand from DEFAULT_TABLE with γ = 0.9 unless said, per byte of
the new version: compress 1/rate, send (1 - γ)·ratio/link.
"""

from __future__ import annotations

import io

import pytest

from hycloud_core.delta import level, versioned
from hycloud_core.delta.level import DEFAULT_TABLE, LevelCost


def test_slow_link_gets_the_smallest_delta():
    # 1 kB/s: level 3 costs 7.6e-9 + 1.0e-4, level 12 4.0e-8 + 8.5e-5, level 19 1.25e-6 + 6.7e-5
    assert level.choose(10**8, 1e3, gamma=0.9) == 19


def test_fast_link_gets_the_fastest_compression():
    # 1.25 GB/s: level 3 costs 7.58e-9 + 8.0e-11, level 1 7.63e-9 + 8.2e-11, level 6 1.35e-8 + ...
    assert level.choose(10**8, 1.25e9, gamma=0.9) == 3


def test_middle_link_gets_a_middle_level():
    # 1 MB/s: level 3 1.0758e-7, level 6 1.0721e-7, level 9 1.164e-7, level 12 1.251e-7
    assert level.choose(10**8, 1e6, gamma=0.9) == 6


def test_measured_gamma_moves_the_choice():
    # γ = 0.96 at 1 MB/s: level 3 7.6e-9 + 4.0e-8 = 4.8e-8, level 6 1.35e-8 + 3.7e-8 = 5.1e-8
    assert level.choose(10**8, 1e6, gamma=0.96) == 3


def test_default_gamma_is_a_release_series_one():
    # γ 0.98 at 10 Mbit/s: level 3 7.6e-9 + 1.6e-8 = 2.4e-8, level 6 1.35e-8 + 1.5e-8 = 2.9e-8
    assert level.GAMMA == 0.98 and level.choose(10**8, 1.25e6) == 3
    # 1 Mbit/s: level 3 7.6e-9 + 1.6e-7 = 1.68e-7, level 6 1.35e-8 + 1.5e-7 = 1.63e-7, level 9 1.70e-7
    assert level.choose(10**8, 1.25e5) == 6


def test_total_seconds_is_eq2_level_part():
    table = {3: LevelCost(100e6, 1.0), 19: LevelCost(1e6, 0.5)}
    # 100 MB at level 19: 100 s of compression, 10 MB·0.5 over 1 MB/s = 5 s, plus 0.2 s RTT
    assert level.total_seconds(19, 10**8, 1e6, 0.2, table, 0.9) == pytest.approx(105.2)
    assert level.total_seconds(3, 10**8, 1e6, 0.2, table, 0.9) == pytest.approx(11.2)
    assert level.choose(10**8, 1e6, 0.2, table, 0.9) == 3
    assert level.choose(10**8, 1e4, 0.2, table, 0.9) == 19  # 100 + 500 s against 1 + 1000 s


def test_cap_keeps_what_fits_the_budget():
    assert level.BUDGET_S == 90
    assert level.cap(19, 50 * 10**6) == 19  # 62.5 s at 0.8 MB/s
    assert level.cap(3, 10**10) == 3  # 76 s at 132 MB/s


def test_cap_lowers_a_level_over_the_budget():
    assert level.cap(19, 100 * 10**6) == 15  # 125 s at level 19; level 15: 62.5 s
    assert level.cap(19, 10**9) == 12  # level 15: 625 s; level 12: 40 s
    assert level.cap(7, 10**9) == 7  # estimated as level 9, 27.8 s
    assert level.cap(12, 10**11) == 1  # nothing fits: the fastest


@pytest.mark.parametrize("bad", [0, -3, 20, 22, True, 3.0, "3", None])
def test_cap_refuses_levels_out_of_range(bad):
    with pytest.raises(ValueError, match="zstd level"):
        level.cap(bad, 1000)


def test_scaled_table_keeps_ratios_and_moves_rates():
    probe = {lv: rate * 2 for lv, rate in level.REFERENCE_PROBE.items()}
    assert level.speed(probe) == 2
    table = level.scaled(level.speed(probe))
    assert table[19] == LevelCost(1.6e6, 0.67)
    assert [c.ratio for c in table.values()] == [c.ratio for c in DEFAULT_TABLE.values()]


def test_probe_rates_are_measured_per_level():
    rates = level.probe_rates([3, 19])
    assert set(rates) == {3, 19}
    assert rates[3] > rates[19] > 0


@pytest.mark.parametrize("lv", [1, 3, 19])
def test_any_level_round_trips_and_high_levels_send_less(lv):
    old, new = level.probe_pair(64 * 1024)
    out = io.BytesIO()
    size = versioned.encode(io.BytesIO(old), len(old), io.BytesIO(new), len(new), out, level=lv)
    out.seek(0)
    got = io.BytesIO()
    assert versioned.apply(io.BytesIO(old), out, got) == len(new)
    assert got.getvalue() == new
    at3 = versioned.encode(io.BytesIO(old), len(old), io.BytesIO(new), len(new), io.BytesIO(), level=3)
    assert (size <= at3) if lv == 19 else size > 0
