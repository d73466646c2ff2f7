import itertools
import random
import statistics
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hycloud_core.control.planner import (
    PlanProblem,
    evaluate,
    plan_download,
    plan_exact,
    plan_fast,
    seconds_per_byte,
    split_replicated,
)

CHUNK = 2 * 1024 * 1024  # S̄_f: the file-size threshold is also the chunk size


def file_layout(rng: random.Random, max_instances: int = 6, max_chunks: int = 50) -> PlanProblem:
    """A coded file as the system stores it: equal blocks, a shorter last chunk, RS(n, k)."""
    n_inst = rng.randint(3, max_instances)
    n = rng.randint(3, n_inst)
    k = rng.randint(2, n - 1)
    m = rng.randint(1, max_chunks)
    blocks = [CHUNK // k] * m
    blocks[-1] = rng.randint(1, CHUNK // k)
    cost = [
        seconds_per_byte(
            rng.uniform(5e6, 200e6), rng.uniform(1e6, 20e6), rng.uniform(0, 0.9), rng.uniform(50e6, 500e6)
        )
        for _ in range(n_inst)
    ]
    holders = [frozenset(rng.sample(range(n_inst), n)) for _ in range(m)]
    return PlanProblem(blocks, holders, k, cost)


def test_seconds_per_byte_is_the_bracket_of_eq_5():
    assert seconds_per_byte(100.0, 10.0, 0.5, 50.0) == pytest.approx(1 / 100 + 0.5 / 10 + 1 / 50)
    assert seconds_per_byte(100.0, 10.0) == pytest.approx(1 / 100 + 1 / 10)
    with pytest.raises(ValueError):
        seconds_per_byte(0.0, 1.0)


def test_evaluate_enforces_eq_3():
    problem = PlanProblem([10, 10], [frozenset({0, 1, 2}), frozenset({0, 1, 2})], 2, [1.0, 2.0, 3.0])
    assert evaluate(problem, [[0, 1], [0, 2]]).loads == (20.0, 20.0, 30.0)
    with pytest.raises(ValueError):
        evaluate(problem, [[0, 0], [0, 2]])
    with pytest.raises(ValueError):
        evaluate(problem, [[0], [0, 2]])
    with pytest.raises(ValueError):
        PlanProblem([10], [frozenset({0})], 2, [1.0])


def test_small_case_by_hand():
    # Three instances, instance 2 three times slower; six chunks held everywhere, k = 2.
    # Optimum: 12 blocks with loads 5, 5, 2 blocks -> times 5, 5, 6 -> makespan 6.
    problem = PlanProblem([1] * 6, [frozenset({0, 1, 2})] * 6, 2, [1.0, 1.0, 3.0])
    assert plan_fast(problem).makespan == pytest.approx(6.0)
    assert plan_exact(problem).makespan == pytest.approx(6.0)


def _check_against_exact(count: int, seed: int) -> list[float]:
    rng = random.Random(seed)
    gaps = []
    for _ in range(count):
        problem = file_layout(rng)
        fast, exact = plan_fast(problem), plan_exact(problem)
        assert exact.makespan <= fast.makespan * (1 + 1e-7)
        gaps.append(fast.makespan / exact.makespan - 1)
    return gaps


@pytest.mark.slow
def test_fast_plan_within_5_percent_of_optimum_100_files():
    gaps = _check_against_exact(100, seed=100)
    assert max(gaps) <= 0.05


def _brute_force(problem: PlanProblem) -> float:
    choices = [list(itertools.combinations(sorted(h), problem.k)) for h in problem.holders]
    return min(evaluate(problem, chosen).makespan for chosen in itertools.product(*choices))


def test_the_exact_plan_is_the_best_of_every_assignment():
    """plan_exact counts per group of interchangeable chunks; enumerating every per-chunk choice
    of small layouts (repeated holder sets, a short last chunk, set-up costs) finds none better,
    and its per-chunk holders are valid (evaluate checks them)."""
    rng = random.Random(11)
    for case in range(40):
        base = file_layout(rng, max_instances=4, max_chunks=4)
        setup = [rng.uniform(0, 0.05) for _ in base.cost] if case % 2 else ()
        problem = PlanProblem(base.block_sizes, base.holders, base.k, base.cost, setup)
        assert plan_exact(problem).makespan == pytest.approx(_brute_force(problem), rel=1e-9)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_fast_plan_is_optimal_for_equal_blocks(seed):
    rng = random.Random(seed)
    problem = file_layout(rng, max_chunks=30)
    equal = PlanProblem([CHUNK] * len(problem.holders), problem.holders, problem.k, problem.cost)
    assert plan_fast(equal).makespan == pytest.approx(plan_exact(equal).makespan, rel=1e-9)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_arbitrary_block_sizes_stay_valid_and_close(seed):
    # Not a layout the system produces; the solver is a heuristic here. Keep it honest. An
    # unrestricted search (HYPOTHESIS_PROFILE=explore) has found layouts 26% above the optimum.
    rng = random.Random(seed)
    base = file_layout(rng, max_chunks=8)
    sizes = [rng.randint(1, CHUNK) for _ in base.holders]
    problem = PlanProblem(sizes, base.holders, base.k, base.cost)
    fast = plan_fast(problem)
    evaluate(problem, fast.assignment)
    assert fast.makespan <= plan_exact(problem).makespan * 1.25


def test_plans_fifty_chunks_on_five_instances_in_under_10_ms():
    rng = random.Random(7)
    problems = []
    for n, k in ((3, 2), (4, 2), (5, 3), (5, 2)):
        blocks = [CHUNK // k] * 49 + [12345]
        cost = [1 / rng.uniform(1e6, 20e6) for _ in range(5)]
        problems.append(PlanProblem(blocks, [frozenset(rng.sample(range(5), n)) for _ in range(50)], k, cost))
    for problem in problems:
        times = []
        for _ in range(31):
            start = time.perf_counter()
            plan_fast(problem)
            times.append(time.perf_counter() - start)
        assert statistics.median(times) < 0.010


def test_named_front_end():
    chunks, makespan = plan_download([4, 4, 2], [{"a", "b", "c"}] * 3, 2, {"a": 1.0, "b": 1.0, "c": 100.0})
    assert [set(c) for c in chunks] == [{"a", "b"}] * 3
    assert makespan == pytest.approx(10.0)


@settings(max_examples=200, deadline=None)
@given(
    st.integers(0, 10**10),
    st.dictionaries(st.sampled_from("abcdef"), st.floats(1e-9, 1e-6), min_size=1, max_size=6),
)
def test_replicated_split_covers_the_file_in_proportion_to_speed(size, cost):
    ranges = split_replicated(size, cost)
    spans = sorted(ranges.values())
    assert spans[0][0] == 0 and spans[-1][1] == size
    assert all(a[1] == b[0] for a, b in zip(spans, spans[1:], strict=False))
    times = [(end - start) * cost[name] for name, (start, end) in ranges.items()]
    assert max(times) - min(times) <= 2 * max(cost.values()) + 1e-9 * max(times)


def test_the_layer_does_not_load_scipy_unless_the_exact_solver_runs():
    import subprocess
    import sys

    code = (
        "import sys, hycloud_core.control; assert 'scipy' not in sys.modules and 'boto3' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True, env={"PYTHONPATH": "layers/core"})


def _with_setup(problem: PlanProblem, rng: random.Random) -> PlanProblem:
    """The same file with a set-up time per instance of up to about a third of the whole download."""
    whole = sum(problem.block_sizes) * max(problem.cost)
    setup = [rng.uniform(0, whole / 3) for _ in problem.cost]
    return PlanProblem(problem.block_sizes, problem.holders, problem.k, problem.cost, setup)


def test_set_up_costs_keep_the_fast_plan_within_5_percent_of_the_optimum():
    rng = random.Random(7)
    for _ in range(60):
        problem = _with_setup(file_layout(rng, max_chunks=12), rng)
        fast, exact = plan_fast(problem), plan_exact(problem)
        assert exact.makespan <= fast.makespan * (1 + 1e-7)
        assert fast.makespan <= exact.makespan * 1.05
        used = {r for chunk in fast.assignment for r in chunk}
        per_byte = [0.0] * len(problem.cost)
        for i, chunk in enumerate(fast.assignment):
            for r in chunk:
                per_byte[r] += problem.block_sizes[i] * problem.cost[r]
        assert fast.loads == pytest.approx(
            [per_byte[r] + problem.setup[r] * (r in used) for r in range(len(per_byte))]
        )


def test_a_slow_far_instance_is_left_out_of_a_short_download_only():
    """RS(4,2) on four instances, one at a tenth of the others' rate and a 2 s set-up."""
    cost, setup = [1 / 5e6, 1 / 5e6, 1 / 5e6, 1 / 0.5e6], [0.1, 0.1, 0.1, 2.0]

    def used(chunks: int) -> set[int]:
        holders = [frozenset(range(4))] * chunks
        plan = plan_fast(PlanProblem([CHUNK // 2] * chunks, holders, 2, cost, setup))
        return {r for chunk in plan.assignment for r in chunk}

    assert used(4) == {0, 1, 2}
    assert used(400) == {0, 1, 2, 3}
