"""Multi-source download planning (seed 000 eq. 3 and 5, footnote 2).

Each of m chunks is stored as n erasure-coded blocks on distinct instances; any k of them
rebuild the chunk. Instance r spends ``cost[r]`` seconds per byte (the bracket of eq. 5:
``1/BW_t + (1-γ)/BW_d + 1/C_r``), so its workload time is ``t_r = cost[r] * Σ b_i d_ri``.
The file is done when the slowest instance is, so we choose, for each chunk, k holders that
minimise ``max_r t_r``. An instance used at all also pays ``setup[r]`` seconds once (connection
set-up and the first round trips, measured): it weighs on short downloads, where leaving a slow,
far instance out can finish sooner, so with set-up costs every usable set of instances is tried
(at most 2^N - 1; N is the instance count, a handful).

Two solvers:

* :func:`plan_fast`, used in practice: longest-block-first greedy, then repeated
  bottleneck relief along alternating paths (move one block off the slowest instance, let the
  receiver hand one of its blocks on, and so on, until an instance with room takes it). When
  all blocks have the same size this is exact: if no such path leaves the bottleneck, the
  symmetric difference with any better plan would contain one (the b-matching augmenting-path
  argument), so none exists. The last, shorter chunk of a file makes it a heuristic; tests bound
  its gap to the exact optimum.
* :func:`plan_exact`, for checking: the integer program of eq. 3/5 solved by branch and bound
  (HiGHS through ``scipy.optimize.milp``, imported only when called).

With fewer than three instances the file is replicated rather than coded and
:func:`split_replicated` divides its bytes in proportion to the instances' speeds.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations, islice

_REL_EPS = 1e-12
_MAX_ROUNDS = 10_000
_MAX_ODD_TRIALS = 64  # C(6, 3) = 20 covers every RS(n, k) on up to six instances


def seconds_per_byte(bw_t: float, bw_d: float, gamma: float = 0.0, delta_rate: float | None = None) -> float:
    """The bracket of eq. 5; ``delta_rate`` (C_r) is None when no delta is computed."""
    if bw_t <= 0 or bw_d <= 0:
        raise ValueError("bandwidths must be positive")
    if not 0.0 <= gamma <= 1.0:
        raise ValueError("gamma must be within [0, 1]")
    compute = 1.0 / delta_rate if delta_rate else 0.0
    return 1.0 / bw_t + (1.0 - gamma) / bw_d + compute


@dataclass(frozen=True)
class PlanProblem:
    """Instances are numbered 0..N-1; ``holders[i]`` are the instances storing chunk i's blocks."""

    block_sizes: Sequence[int]
    holders: Sequence[frozenset[int]]
    k: int
    cost: Sequence[float]  # seconds per byte per instance
    setup: Sequence[float] = ()  # seconds an instance costs once if used at all (empty: none)

    def __post_init__(self) -> None:
        if self.setup and len(self.setup) != len(self.cost):
            raise ValueError("one set-up time per instance")
        if len(self.block_sizes) != len(self.holders):
            raise ValueError("one holder set per chunk")
        if self.k < 1 or any(len(h) < self.k for h in self.holders):
            raise ValueError("every chunk needs at least k holders")
        if any(r < 0 or r >= len(self.cost) for h in self.holders for r in h):
            raise ValueError("holder outside the instance list")


@dataclass(frozen=True)
class Plan:
    assignment: tuple[tuple[int, ...], ...]  # per chunk, the k instances to fetch from
    loads: tuple[float, ...]  # t_r per instance, seconds
    makespan: float


def evaluate(problem: PlanProblem, assignment: Sequence[Sequence[int]]) -> Plan:
    """Check an assignment against eq. 3 and compute its t_r and makespan."""
    loads = [0.0] * len(problem.cost)
    for i, chosen in enumerate(assignment):
        if len(set(chosen)) != problem.k or not set(chosen) <= problem.holders[i]:
            raise ValueError(f"chunk {i}: need {problem.k} distinct holders, got {chosen}")
        for r in chosen:
            loads[r] += problem.block_sizes[i] * problem.cost[r]
    for r in {r for chosen in assignment for r in chosen} if problem.setup else ():
        loads[r] += problem.setup[r]
    frozen = tuple(tuple(sorted(c)) for c in assignment)
    return Plan(frozen, tuple(loads), max(loads, default=0.0))


def plan_fast(problem: PlanProblem) -> Plan:
    """:func:`plan_costs` on all instances; with set-up costs, the best over every usable subset."""
    if not any(problem.setup):
        return plan_costs(problem)
    best: Plan | None = None
    n = len(problem.cost)
    for mask in range(1, 1 << n):
        used = frozenset(r for r in range(n) if mask >> r & 1)
        holders = [h & used for h in problem.holders]
        if any(len(h) < problem.k for h in holders):
            continue
        offsets = [problem.setup[r] if r in used else 0.0 for r in range(n)]
        sub = PlanProblem(problem.block_sizes, holders, problem.k, problem.cost)
        plan = evaluate(problem, plan_costs(sub, offsets).assignment)
        if best is None or plan.makespan < best.makespan:
            best = plan
    assert best is not None  # all instances together are usable (checked by PlanProblem)
    return best


def plan_costs(problem: PlanProblem, offsets: Sequence[float] = ()) -> Plan:
    """Greedy start plus alternating-path bottleneck relief; `offsets`: each instance's load
    before any block (its set-up).

    Exact when blocks have equal size. A file's last chunk is usually shorter; relief cannot
    see the best home for that odd block, so each k-subset of its holders is tried with the
    block pinned there, warm-started from the current plan (exact again for that layout).
    """
    state = _State.greedy(problem, offsets)
    state.relieve()
    sizes = problem.block_sizes
    if len(set(sizes)) > 1:
        odd = min(range(len(sizes)), key=lambda i: (sizes[i], i))
        best = state
        for subset in islice(combinations(sorted(problem.holders[odd]), problem.k), _MAX_ODD_TRIALS):
            if set(subset) == state.chosen[odd]:
                continue
            trial = state.copy()
            trial.move_chunk(odd, set(subset))
            trial.pinned = odd
            trial.relieve()
            if trial.makespan() < best.makespan():
                best = trial
        state = best
    return evaluate(problem, [sorted(c) for c in state.chosen])


class _State:
    """A plan under construction: per-instance loads and served chunks, per-chunk holders."""

    def __init__(
        self, problem: PlanProblem, loads: list[float], served: list[set[int]], chosen: list[set[int]]
    ):
        self.problem, self.loads, self.served, self.chosen = problem, loads, served, chosen
        self.pinned = -1  # a chunk that relief must not move

    @classmethod
    def greedy(cls, problem: PlanProblem, offsets: Sequence[float] = ()) -> _State:
        """Longest block first, each onto the k holders that finish it earliest."""
        sizes, cost = problem.block_sizes, problem.cost
        loads = list(offsets) or [0.0] * len(cost)
        state = cls(problem, loads, [set() for _ in cost], [set() for _ in sizes])
        for i in sorted(range(len(sizes)), key=lambda i: -sizes[i]):
            best = sorted(problem.holders[i], key=lambda r: (state.loads[r] + sizes[i] * cost[r], r))
            for r in best[: problem.k]:
                state.give(i, -1, r)
        return state

    def copy(self) -> _State:
        return _State(
            self.problem, self.loads[:], [set(s) for s in self.served], [set(c) for c in self.chosen]
        )

    def makespan(self) -> float:
        return max(self.loads, default=0.0)

    def give(self, chunk: int, giver: int, taker: int) -> None:
        """Hand a block of ``chunk`` from ``giver`` (-1: nobody) to ``taker``."""
        size = self.problem.block_sizes[chunk]
        if giver >= 0:
            self.loads[giver] -= size * self.problem.cost[giver]
            self.served[giver].remove(chunk)
            self.chosen[chunk].remove(giver)
        self.loads[taker] += size * self.problem.cost[taker]
        self.served[taker].add(chunk)
        self.chosen[chunk].add(taker)

    def move_chunk(self, chunk: int, holders: set[int]) -> None:
        leaving = sorted(self.chosen[chunk] - holders)
        for giver, taker in zip(leaving, sorted(holders - self.chosen[chunk]), strict=True):
            self.give(chunk, giver, taker)

    def relieve(self) -> None:
        for _ in range(_MAX_ROUNDS):
            if not self._relieve_once():
                return

    def _relieve_once(self) -> bool:
        """Lower one instance that sits at the makespan; False when it cannot be lowered."""
        top = self.makespan()
        if top <= 0:
            return False
        limit = top - top * _REL_EPS
        source = next(r for r in range(len(self.loads)) if self.loads[r] >= limit)
        path = self._find_path(source, limit)
        for giver, chunk, taker in path or ():
            self.give(chunk, giver, taker)
        return path is not None

    def _find_path(self, source: int, limit: float) -> list[tuple[int, int, int]] | None:
        """BFS over instances for a chain of block hand-overs that lowers ``source``.

        The chain ends at an instance that stays below ``limit`` after taking one block, or
        closes back on ``source`` when what it takes back is smaller than what it gave. An
        intermediate instance receives one block and gives one away; it may not end at or
        above the limit unless its load does not grow, so the count of instances at the
        makespan falls with every chain and relief terminates.
        """
        sizes, cost, holders = self.problem.block_sizes, self.problem.cost, self.problem.holders
        came_from: dict[int, tuple[int, int]] = {source: (-1, -1)}  # instance -> (giver, chunk)
        incoming = {source: 0}
        first: dict[int, int] = {}  # instance -> size of the block source gave on its chain
        queue = deque([source])
        while queue:
            u = queue.popleft()
            for chunk in self.served[u]:
                if chunk == self.pinned:
                    continue
                if u != source and incoming[u] > sizes[chunk]:
                    if self.loads[u] + (incoming[u] - sizes[chunk]) * cost[u] >= limit:
                        continue
                gave = first.get(u, sizes[chunk])
                for v in holders[chunk]:
                    if v in self.chosen[chunk]:
                        continue
                    if v == source:
                        if self.loads[v] + (sizes[chunk] - gave) * cost[v] < limit:
                            return _unwind(came_from, u) + [(u, chunk, v)]
                        continue
                    ends = self.loads[v] + sizes[chunk] * cost[v] < limit
                    if v in came_from:
                        if ends and v not in _chain(came_from, u):
                            return _unwind(came_from, u) + [(u, chunk, v)]
                        continue
                    came_from[v] = (u, chunk)
                    incoming[v], first[v] = sizes[chunk], gave
                    if ends:
                        return _unwind(came_from, v)
                    queue.append(v)
        return None


def _chain(came_from: dict[int, tuple[int, int]], end: int) -> set[int]:
    """The instances on the BFS tree path from the source to ``end``."""
    nodes = {end}
    while came_from[end][0] != -1:
        end = came_from[end][0]
        nodes.add(end)
    return nodes


def _unwind(came_from: dict[int, tuple[int, int]], end: int) -> list[tuple[int, int, int]]:
    path = []
    taker = end
    while came_from[taker][0] != -1:
        giver, chunk = came_from[taker]
        path.append((giver, chunk, taker))
        taker = giver
    return path[::-1]


def plan_exact(problem: PlanProblem) -> Plan:
    """Optimal plan of the integer program of eq. 3/5 (branch and bound in HiGHS). For checking.

    Chunks of one size held by the same instances are interchangeable, so the program counts how
    many of each such group every instance serves instead of choosing per chunk: the same optimum
    without the symmetric branches (2.7x less time over the 100 layouts the tests check)."""
    import numpy as np
    from scipy.optimize import Bounds, LinearConstraint, milp

    groups: dict[tuple[int, frozenset[int]], list[int]] = {}
    for i, key in enumerate(zip(problem.block_sizes, problem.holders, strict=True)):
        groups.setdefault(key, []).append(i)
    keys = list(groups)
    pairs = [(g, r) for g, (_, holders) in enumerate(keys) for r in sorted(holders)]
    n_pairs, n_inst = len(pairs), len(problem.cost)
    setup = list(problem.setup) or [0.0] * n_inst
    # columns: n_gr per pair (chunks of group g instance r serves), u_r per instance (used at
    # all: pays its set-up), T
    width, t_col = n_pairs + n_inst + 1, n_pairs + n_inst
    scale = max(keys[g][0] * problem.cost[r] for g, r in pairs) if pairs else 1.0
    pick = np.zeros((len(keys), width))
    load = np.zeros((n_inst, width))
    uses = np.zeros((n_pairs, width))
    upper = np.r_[np.zeros(n_pairs), np.ones(n_inst), np.inf]
    for col, (g, r) in enumerate(pairs):
        size, count = keys[g][0], len(groups[keys[g]])
        pick[g, col] = 1.0
        load[r, col] = size * problem.cost[r] / scale
        uses[col, col], uses[col, n_pairs + r] = 1.0, -count  # n_gr <= count_g * u_r
        upper[col] = count  # at most one block of each chunk per instance
    for r in range(n_inst):
        load[r, n_pairs + r] = setup[r] / scale
    load[:, t_col] = -1.0  # s_r u_r + sum_g b_g c_r n_gr - T <= 0
    need = np.array([problem.k * len(groups[key]) for key in keys], dtype=float)
    objective = np.zeros(width)
    objective[t_col] = 1.0
    result = milp(
        objective,
        constraints=[
            LinearConstraint(pick, need, need),
            LinearConstraint(load, -np.inf, 0.0),
            LinearConstraint(uses, -np.inf, 0.0),
        ],
        integrality=np.r_[np.ones(n_pairs + n_inst), 0],
        bounds=Bounds(np.zeros(width), upper),
        options={"mip_rel_gap": 1e-9},
    )
    if not result.success:
        raise RuntimeError(f"MILP failed: {result.message}")
    served = {pair: round(result.x[col]) for col, pair in enumerate(pairs)}
    return evaluate(problem, _spread(len(problem.holders), groups, served))


def _spread(
    chunk_count: int, groups: dict[tuple[int, frozenset[int]], list[int]], served: dict[tuple[int, int], int]
) -> list[list[int]]:
    """Per-chunk holders from per-group counts: each group's instances, each repeated as often
    as it serves (never more than the group's chunk count), dealt to its chunks in turn, so a
    chunk's k instances are distinct."""
    assignment: list[list[int]] = [[] for _ in range(chunk_count)]
    for g, ((_, holders), chunks) in enumerate(groups.items()):
        dealt = [r for r in sorted(holders) for _ in range(served[(g, r)])]
        for position, r in enumerate(dealt):
            assignment[chunks[position % len(chunks)]].append(r)
    return assignment


def split_replicated(size: int, cost: Mapping[str, float]) -> dict[str, tuple[int, int]]:
    """Byte ranges [start, end) per replica, proportional to speed (footnote 2).

    Each replica then finishes at about the same time: bytes_r * cost_r is equal for all r.
    """
    if not cost or any(c <= 0 for c in cost.values()):
        raise ValueError("need positive per-byte costs")
    names = sorted(cost)
    speed = {name: 1.0 / cost[name] for name in names}
    total = sum(speed.values())
    ranges, start, acc = {}, 0, 0.0
    for name in names:
        acc += speed[name]
        end = size if name == names[-1] else round(size * acc / total)
        ranges[name] = (start, end)
        start = end
    return ranges


def plan_download(
    block_sizes: Sequence[int],
    holders: Sequence[Iterable[str]],
    k: int,
    cost: Mapping[str, float],
    setup: Mapping[str, float] | None = None,
) -> tuple[list[tuple[str, ...]], float]:
    """Named front end of :func:`plan_fast`: per chunk the instances to fetch from, and the makespan.
    `setup`: seconds per instance used at all (absent: none)."""
    names = sorted(cost)
    index = {name: r for r, name in enumerate(names)}
    problem = PlanProblem(
        block_sizes=list(block_sizes),
        holders=[frozenset(index[name] for name in chunk) for chunk in holders],
        k=k,
        cost=[cost[name] for name in names],
        setup=[(setup or {}).get(name, 0.0) for name in names] if setup else (),
    )
    plan = plan_fast(problem)
    return [tuple(names[r] for r in chunk) for chunk in plan.assignment], plan.makespan
