"""The threshold a deployment chooses from its measured mix (cost/threshold_choice.py): the bills'
crossovers against the ones worked by hand from prices.json, and the guard rails on top."""

from __future__ import annotations

import pytest

from hycloud_core.cost.access_meter import Meter, band
from hycloud_core.cost.threshold_choice import (
    MAX_THRESHOLD,
    Guard,
    Mix,
    bills,
    choose,
    choose_for_user,
    move_cost,
)
from tests.unit.core.cost.worked import GiB, KiB, MiB, P

ANY = Guard(min_files=1, min_days=0.0)
N = 3000  # accesses per file and month: the access charges dwarf a month's storage of one file

# One controller call: API Gateway, Lambda (512 MB, 100 ms) and the API key's read
CALL = (
    P["apigw_rest_per_million"] / 1e6
    + P["lambda_per_million"] / 1e6
    + 0.5 * 0.1 * P["lambda_gb_second"]
    + P["dynamodb_read_per_million"] / 1e6
)
COMMIT = 2 * P["dynamodb_write_per_million"] / 1e6  # the file record and its object or lease


def _mix(size: int, reads: int = 0, writes: int = 0, files: int = 1) -> Mix:
    """`files` files of `size` bytes, just written, with this month's reads and writes of each."""
    meter = Meter(
        0.0, {band(size): reads * files} if reads else {}, {band(size): writes * files} if writes else {}
    )
    return Mix([(size, 0.0)] * files, meter, measured_days=30.0)


def _efs_dearer(size: int, **access: int) -> bool:
    """Whether the file costs more small (threshold 4 MiB) than large (threshold 4 KiB)."""
    priced = bills(_mix(size, **access), P, [4 * KiB, MAX_THRESHOLD])
    return priced[MAX_THRESHOLD] > priced[4 * KiB]


def test_written_files_cross_where_efs_writes_cost_what_an_upload_to_s3_costs():
    # small write: one call, a commit, the bytes written to EFS (Elastic, $0.06/GB);
    # large write: two calls (start, commit), a commit, a PUT, initiate and complete, and one
    # lifecycle transition into Intelligent-Tiering (objects of 128 KiB and more)
    small = CALL + COMMIT
    large = 2 * CALL + COMMIT + 3 * P["s3_put_per_1000"] / 1000 + P["s3_lifecycle_transition_per_1000"] / 1000
    crossover = (large - small) / P["efs_elastic_write_gb"] * GiB
    assert crossover == pytest.approx(530_780, rel=1e-3)  # about 518 KiB
    assert not _efs_dearer(int(crossover * 0.98), writes=N)
    assert _efs_dearer(int(crossover * 1.02), writes=N)


def test_read_files_cross_where_efs_reads_cost_a_get():
    # small read: one call, the bytes read from EFS (Elastic, $0.03/GB); large read: one call for
    # the URL, one GET (direct: no relay)
    crossover = (P["s3_get_per_1000"] / 1000) / P["efs_elastic_read_gb"] * GiB
    assert crossover == pytest.approx(14_316, rel=1e-3)  # about 14 KiB
    assert not _efs_dearer(int(crossover * 0.9), reads=N)
    assert _efs_dearer(int(crossover * 1.1), reads=N)


def test_unread_files_cross_where_a_link_file_costs_what_the_data_saves():
    """Unwritten, unread, just written (so all month in the standard tiers): EFS meters 2 KiB plus
    the data in 4 KiB blocks at $0.30; in S3 the data is at $0.023 and a link file (2 + 4 KiB)
    stays in EFS: S3 is dearer only for a file of one block, and the segments take the rest."""
    assert not _efs_dearer(4 * KiB)
    assert _efs_dearer(256 * KiB)


def test_the_choice_follows_the_crossover_and_ties_go_to_the_threshold_in_force():
    # 400 KB files written often stay in EFS: every candidate from 512 KiB up bills the same, and
    # the one nearest the 2 MiB in force is kept
    kept = choose(_mix(400_000, writes=N, files=20), P, 2 * MiB, ANY)
    assert (kept.threshold, kept.best, kept.changed) == (2 * MiB, 2 * MiB, False)
    # 700 KB files written as often belong in S3: the nearest candidate under them is chosen
    moved = choose(_mix(700_000, writes=N, files=20), P, 2 * MiB, ANY)
    assert (moved.threshold, moved.previous) == (512 * KiB, 2 * MiB)
    assert moved.bills[512 * KiB] < moved.bills[2 * MiB]
    assert "chose 512 KiB" in moved.reason


def test_too_little_measured_keeps_the_threshold_in_force():
    few = choose(_mix(700_000, writes=N, files=20), P, 2 * MiB, Guard(min_files=100, min_days=0))
    assert (few.threshold, few.bills) == (2 * MiB, {}) and "20 files" in few.reason
    young = _mix(700_000, writes=N, files=20)
    young = Mix(young.files, young.meter, measured_days=1.0)
    assert choose(young, P, 2 * MiB, Guard(min_files=1, min_days=7)).threshold == 2 * MiB


def test_hysteresis_a_small_saving_or_a_costly_move_keeps_the_threshold():
    mix = _mix(700_000, writes=N, files=20)
    picked = choose(mix, P, 2 * MiB, ANY)
    share = picked.saving(2 * MiB) / picked.bills[2 * MiB]
    assert choose(mix, P, 2 * MiB, Guard(1, 0.0, switch_share=share * 1.01)).threshold == 2 * MiB
    assert choose(mix, P, 2 * MiB, Guard(1, 0.0, switch_share=share * 0.99)).threshold == 512 * KiB
    # the move is repaid in time or not at all
    months = move_cost(mix, P, 2 * MiB, 512 * KiB) / picked.saving(2 * MiB)
    assert choose(mix, P, 2 * MiB, Guard(1, 0.0, payback_months=months * 0.99)).threshold == 2 * MiB
    # chosen once, the next round keeps it: it is now the cheapest
    assert choose(mix, P, 512 * KiB, ANY).changed is False


def test_the_threshold_stays_in_its_range():
    assert choose(_mix(700_000, files=1), P, 64 * MiB, Guard(min_files=10)).threshold == MAX_THRESHOLD
    priced = choose(_mix(5 * MiB, writes=N, files=5), P, 2 * MiB, ANY).bills
    assert max(priced) == MAX_THRESHOLD and min(priced) == 4 * KiB


def test_a_user_gets_a_threshold_of_their_own_only_where_it_pays():
    hot = _mix(400_000, writes=N, files=20)  # EFS is right for them at any threshold above
    assert choose_for_user(hot, P, 2 * MiB, None, ANY) is None  # follows the deployment
    cold_writes = _mix(700_000, writes=N, files=20)
    own = choose_for_user(cold_writes, P, 2 * MiB, None, ANY)
    assert own is not None and own.threshold == 512 * KiB
    # kept while it saves half the switch share, dropped when the deployment's is as good
    assert choose_for_user(cold_writes, P, 2 * MiB, 512 * KiB, ANY) is not None
    assert choose_for_user(cold_writes, P, 512 * KiB, 512 * KiB, ANY) is None
