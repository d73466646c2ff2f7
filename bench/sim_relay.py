"""Adaptive relay-worker adoption over a download burst (seed 000 Fig. 20).

The 2,002-file burst of ``workload.py`` is served by relay workers of 100 Mbit/s each. A
worker's bandwidth is shared max-min fairly among its transfers, and each transfer is also
limited by its client's link (lognormal, median 50 Mbit/s, σ = 0.5, the client-relay figure of
seed 000 §IV-B). Requests wait in the production ``FopQueue``; the controller dispatches the
next one whenever some in-use worker has spare bandwidth, to the worker with the most
(``RelayPool.dispatch``). Every second workers report BW_a = BW_o - Σ rates and
``RelayPool.adjust`` applies eq. 7 (add when all are at or below 20 %) and eq. 8 (lazily
retire the lowest-BW_o worker when all are at or above 60 %). A new worker takes
``--startup`` seconds (default 30 s, a container or VM start) before it takes transfers.

Compared with the same controller held to one worker: total download time (first arrival to
last finish), mean completion time, and workers over time (alive ones: starting, active or
finishing before retirement). Usage: ``python bench/sim_relay.py [--seed S] [--startup S]``.
"""

from __future__ import annotations

import math
import random
import statistics
import sys
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "layers" / "core"))

import result_files  # noqa: E402
import sim_cli  # noqa: E402
from workload import Request, describe, download_burst  # noqa: E402

from hycloud_core.control.bandwidth import BandwidthEstimator  # noqa: E402
from hycloud_core.control.fop import FopQueue, Operation, OpKind  # noqa: E402
from hycloud_core.control.relay_adoption import RelayPool  # noqa: E402

MBIT = 1e6 / 8  # bytes per second
WORKER_BPS = 100 * MBIT
CLIENT_MEDIAN_BPS = 50 * MBIT
CLIENT_SIGMA = 0.5
TICK_S = 1.0
SAMPLE_S = 10.0


@dataclass
class Transfer:
    request: Request
    worker: str
    cap: float
    remaining: float
    start: float
    rate: float = 0.0


@dataclass
class Outcome:
    finish: dict[str, float] = field(default_factory=dict)
    start: dict[str, float] = field(default_factory=dict)
    timeline: list[tuple[float, int]] = field(default_factory=list)  # (time, workers alive)


def client_caps(burst: list[Request], seed: int) -> dict[str, float]:
    rng = random.Random(seed + 10_000)
    return {
        r.op_id: min(max(rng.lognormvariate(math.log(CLIENT_MEDIAN_BPS), CLIENT_SIGMA), 5 * MBIT), 200 * MBIT)
        for r in burst
    }


def share(capacity: float, transfers: list[Transfer]) -> None:
    """Max-min fair rates under each transfer's own cap (water-filling)."""
    left, todo = capacity, sorted(transfers, key=lambda t: t.cap)
    for i, t in enumerate(todo):
        t.rate = min(t.cap, left / (len(todo) - i))
        left -= t.rate


class RelaySim:
    def __init__(
        self,
        burst: list[Request],
        caps: dict[str, float],
        max_workers: int,
        startup: float,
        leisure: str = "all",
    ) -> None:
        self.burst, self.caps, self.startup = burst, caps, startup
        self.requests = {r.op_id: r for r in burst}
        self.pool = RelayPool(max_workers=max_workers, leisure=leisure)
        self.pool.add("w0", WORKER_BPS)
        self.queue = FopQueue()
        self.estimator = BandwidthEstimator(period_s=300)
        self.estimator.record_probe(0.0, CLIENT_MEDIAN_BPS)
        self.transfers: dict[str, Transfer] = {}
        self.starting: dict[str, float] = {}  # worker -> ready time
        self.out = Outcome()
        self.now, self.next_id = burst[0].arrival, 1

    def run(self) -> Outcome:
        arrivals, i, next_tick, next_sample = self.burst, 0, self.now, self.now
        while len(self.out.finish) < len(arrivals):
            self._reshare()
            finish_at = min(
                (self.now + t.remaining / t.rate for t in self.transfers.values()), default=math.inf
            )
            arrive_at = arrivals[i].arrival if i < len(arrivals) else math.inf
            ready_at = min(self.starting.values(), default=math.inf)
            t_next = min(finish_at, arrive_at, ready_at, next_tick, next_sample)
            for t in self.transfers.values():
                t.remaining -= t.rate * (t_next - self.now)
            self.now = t_next
            if t_next == next_sample:
                self.out.timeline.append((self.now, len(self.pool.workers)))
                next_sample += SAMPLE_S
            self._complete()
            while i < len(arrivals) and arrivals[i].arrival <= self.now:
                r = arrivals[i]
                op = Operation(r.op_id, OpKind.DOWNLOAD, r.path, r.arrival, r.size)
                self.queue.submit(op, 1.0 / self.estimator.estimate(self.now))
                i += 1
            for worker, ready in list(self.starting.items()):
                if ready <= self.now:
                    del self.starting[worker]
                    self.pool.started(worker)
            if t_next == next_tick:
                self._monitor()
                next_tick += TICK_S
            self._dispatch()
        self.out.timeline.append((self.now, len(self.pool.workers)))
        return self.out

    def _reshare(self) -> None:
        by_worker: dict[str, list[Transfer]] = {}
        for t in self.transfers.values():
            by_worker.setdefault(t.worker, []).append(t)
        for worker, transfers in by_worker.items():
            share(self.pool.workers[worker].initial_bw, transfers)
        for worker in self.pool.workers.values():
            used = sum(t.rate for t in by_worker.get(worker.worker_id, []))
            self.pool.report(worker.worker_id, max(0.0, worker.initial_bw - used))

    def _complete(self) -> None:
        done = [k for k, t in self.transfers.items() if t.remaining <= max(1.0, 1e-9 * t.request.size)]
        for op_id in done:
            t = self.transfers.pop(op_id)
            self.out.finish[op_id] = self.now
            self.estimator.record_transfer(self.now, t.request.size, max(self.now - t.start, 1e-9))
            self.queue.ack(op_id)
            if not any(o.worker == t.worker for o in self.transfers.values()):
                self.pool.idle(t.worker)

    def _monitor(self) -> None:
        self._reshare()
        decision = self.pool.adjust()
        if decision.add:
            worker = f"w{self.next_id}"
            self.next_id += 1
            self.pool.add(worker, WORKER_BPS, starting=self.startup > 0)
            if self.startup > 0:
                self.starting[worker] = self.now + self.startup
        if decision.retire and not any(t.worker == decision.retire for t in self.transfers.values()):
            self.pool.idle(decision.retire)

    def _dispatch(self) -> None:
        while self.queue.peek_ready() is not None:
            self._reshare()
            worker = self.pool.dispatch(min_available=1e-6 * WORKER_BPS)
            if worker is None:
                return
            op = self.queue.next_ready()
            r = self.requests[op.op_id]
            self.transfers[op.op_id] = Transfer(r, worker, self.caps[op.op_id], float(r.size), self.now)
            self.out.start[op.op_id] = self.now


def summarise(burst: list[Request], out: Outcome) -> dict:
    first = burst[0].arrival
    end = max(out.finish.values())
    times = out.timeline
    area = sum((t2 - t1) * n for (t1, n), (t2, _) in zip(times, times[1:], strict=False))
    return {
        "total_download_time_s": end - first,
        "mean_completion_s": statistics.fmean(out.finish[r.op_id] - r.arrival for r in burst),
        "avg_workers": area / (times[-1][0] - times[0][0]),
        "peak_workers": max(n for _, n in times),
        "worker_seconds": area,
        "timeline": [[round(t, 1), n] for t, n in times],
    }


def simulate(seed: int, startup: float, max_workers: int) -> dict:
    burst = download_burst(seed)
    caps = client_caps(burst, seed)
    single = summarise(burst, RelaySim(burst, caps, 1, startup).run())
    result = {
        "seed": seed,
        "startup_s": startup,
        "max_workers": max_workers,
        "workload": describe(burst),
        "single": single,
    }
    for name, leisure in (("adaptive", "all"), ("adaptive_pool", "pool")):
        run = summarise(burst, RelaySim(burst, caps, max_workers, startup, leisure).run())
        run["reduction_total_time"] = 1 - run["total_download_time_s"] / single["total_download_time_s"]
        run["reduction_mean_completion"] = 1 - run["mean_completion_s"] / single["mean_completion_s"]
        result[name] = run
    return result


def sparkline(timeline: list[list[float]], width: int = 60) -> str:
    counts = [n for _, n in timeline]
    step = max(1, len(counts) // width)
    return "".join(str(max(counts[i : i + step])) for i in range(0, len(counts), step))


def markdown(main: dict, others: list[dict]) -> str:
    s, a, p = main["single"], main["adaptive"], main["adaptive_pool"]
    lines = [
        "# Adaptive relay adoption on a 2,002-file download burst (100 Mbit/s workers)",
        "",
        f"Workload seed {main['seed']}: {main['workload']['total_bytes'] / 1e9:.1f} GB within 10 min; "
        f"worker start-up {main['startup_s']:.0f} s; at most {main['max_workers']} workers; θ_c = 20 %, θ_l = 60 %. "
        "'eq. 8' retires only when every worker is at leisure; 'pool' tests the pool's total.",
        "",
        "| | single worker | adaptive, eq. 8 | adaptive, pool leisure |",
        "| --- | ---: | ---: | ---: |",
        f"| total download time (s) | {s['total_download_time_s']:.0f} | {a['total_download_time_s']:.0f} "
        f"({-a['reduction_total_time']:+.1%}) | {p['total_download_time_s']:.0f} ({-p['reduction_total_time']:+.1%}) |",
        f"| mean completion time (s) | {s['mean_completion_s']:.0f} | {a['mean_completion_s']:.1f} "
        f"({-a['reduction_mean_completion']:+.1%}) | {p['mean_completion_s']:.1f} ({-p['reduction_mean_completion']:+.1%}) |",
        f"| average workers | {s['avg_workers']:.2f} | {a['avg_workers']:.2f} | {p['avg_workers']:.2f} |",
        f"| peak workers | {s['peak_workers']} | {a['peak_workers']} | {p['peak_workers']} |",
        f"| worker-seconds | {s['worker_seconds']:.0f} | {a['worker_seconds']:.0f} | {p['worker_seconds']:.0f} |",
        "",
        f"Workers alive over time (one digit per {max(1, len(a['timeline']) // 60) * 10:.0f} s, max in the slot):",
        "",
        f"    eq. 8: {sparkline(a['timeline'])}",
        f"    pool:  {sparkline(p['timeline'])}",
    ]
    if others:
        lines += [
            "",
            "Other seeds and start-up times (total download time; reduction against one worker):",
            "",
            "| seed | start-up (s) | GB | single (s) | eq. 8 (s) | reduction | avg workers | pool (s) | reduction | avg workers |",
            "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
        ]
        for o in others:
            a, p = o["adaptive"], o["adaptive_pool"]
            lines.append(
                f"| {o['seed']} | {o['startup_s']:.0f} | {o['workload']['total_bytes'] / 1e9:.1f} "
                f"| {o['single']['total_download_time_s']:.0f} | {a['total_download_time_s']:.0f} "
                f"| {a['reduction_total_time']:.1%} | {a['avg_workers']:.2f} | {p['total_download_time_s']:.0f} "
                f"| {p['reduction_total_time']:.1%} | {p['avg_workers']:.2f} |"
            )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = sim_cli.parser(__doc__)
    parser.add_argument("--startup", type=float, default=30.0)
    parser.add_argument("--max-workers", type=int, default=8)
    parser.add_argument("--seeds", type=int, default=5, help="extra workload seeds for the summary table")
    args = parser.parse_args()

    main_run = simulate(args.seed, args.startup, args.max_workers)
    others = [
        simulate(s, args.startup, args.max_workers) for s in range(args.seed + 1, args.seed + args.seeds)
    ]
    others += [simulate(args.seed, st, args.max_workers) for st in (0.0, 60.0) if st != args.startup]
    text = markdown(main_run, others)
    print(text)
    result_files.write("sim_relay", {"main": main_run, "others": others}, text, args.out)


if __name__ == "__main__":
    main()
