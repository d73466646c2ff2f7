"""FOP scheduling against FIFO and group fair sharing on a download burst (seed 000 Fig. 19).

One relay link of 50 Mbit/s serves a burst of 2,002 downloads arriving within ten minutes
(see ``workload.py``). Three disciplines, same arrivals:

* FIFO: one file at a time at the full link rate, in arrival order;
* G-Fair: up to 10 waiting files start together as a group and share the link equally; the
  next group starts when the group is done;
* FOP: one file at a time, the smallest ``t_A + t_T`` first, through the production
  ``FopQueue``; ``t_T`` uses the ``BandwidthEstimator`` fed by the finished transfers.

For growing prefixes of the burst we report the average completion time (finish - arrival)
of FOP relative to FIFO and to G-Fair, and the longest wait of a large file (>= 2 MiB) under
FOP and FIFO, to show FOP does not starve them. Usage: ``python bench/sim_fop.py [--seeds N]``.
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "layers" / "core"))

import result_files  # noqa: E402
import sim_cli  # noqa: E402
from workload import LARGE_FILE, Request, describe, download_burst  # noqa: E402

from hycloud_core.control.bandwidth import BandwidthEstimator  # noqa: E402
from hycloud_core.control.fop import FopQueue, Operation, OpKind  # noqa: E402

LINK_BPS = 50e6 / 8  # 50 Mbit/s in bytes per second
GROUP = 10
PREFIXES = [50, 100, 200, 300, 500, 750, 1000, 1250, 1500, 1750, 2002]

Schedule = dict[str, tuple[float, float]]  # op_id -> (start, finish)


def run_fifo(burst: list[Request], link: float = LINK_BPS) -> Schedule:
    out, free = {}, 0.0
    for r in burst:
        start = max(free, r.arrival)
        free = start + r.size / link
        out[r.op_id] = (start, free)
    return out


def run_gfair(burst: list[Request], link: float = LINK_BPS) -> Schedule:
    out, now, i = {}, 0.0, 0
    while i < len(burst):
        now = max(now, burst[i].arrival)
        group = []
        while i < len(burst) and burst[i].arrival <= now and len(group) < GROUP:
            group.append(burst[i])
            i += 1
        start, done = now, 0.0  # processor sharing: the j-th smallest ends when all had its size
        sizes = sorted(group, key=lambda r: r.size)
        for j, r in enumerate(sizes):
            now += (r.size - done) * (len(sizes) - j) / link
            done = r.size
            out[r.op_id] = (start, now)
    return out


def run_fop(burst: list[Request], link: float = LINK_BPS) -> Schedule:
    queue, estimator = FopQueue(), BandwidthEstimator(period_s=300)
    estimator.record_probe(0.0, link)  # the periodic test-file measurement
    out, now, i, by_id = {}, 0.0, 0, {r.op_id: r for r in burst}
    while len(out) < len(burst):
        while i < len(burst) and burst[i].arrival <= now:
            r = burst[i]
            op = Operation(r.op_id, OpKind.DOWNLOAD, r.path, r.arrival, r.size)
            queue.submit(op, seconds_per_byte=1.0 / estimator.estimate(r.arrival))
            i += 1
        op = queue.next_ready()
        if op is None:
            now = burst[i].arrival
            continue
        seconds = by_id[op.op_id].size / link
        out[op.op_id] = (now, now + seconds)
        now += seconds
        estimator.record_transfer(now, op.size, seconds)
        queue.ack(op.op_id)
    return out


def mean_completion(burst: list[Request], sched: Schedule) -> float:
    return statistics.fmean(sched[r.op_id][1] - r.arrival for r in burst)


def longest_large_wait(burst: list[Request], sched: Schedule) -> float:
    return max((sched[r.op_id][0] - r.arrival for r in burst if r.size >= LARGE_FILE), default=0.0)


def evaluate(burst: list[Request]) -> list[dict]:
    rows = []
    for n in PREFIXES:
        part = burst[:n]
        fifo, gfair, fop = run_fifo(part), run_gfair(part), run_fop(part)
        avg = {name: mean_completion(part, s) for name, s in (("fifo", fifo), ("gfair", gfair), ("fop", fop))}
        rows.append(
            {
                "ops": n,
                "avg_completion_s": avg,
                "fop_vs_fifo": avg["fop"] / avg["fifo"],
                "fop_vs_gfair": avg["fop"] / avg["gfair"],
                "longest_large_wait_s": {
                    "fifo": longest_large_wait(part, fifo),
                    "fop": longest_large_wait(part, fop),
                },
                "makespan_s": {
                    name: max(f for _, f in s.values())
                    for name, s in (("fifo", fifo), ("gfair", gfair), ("fop", fop))
                },
            }
        )
    return rows


def load_sweep(burst: list[Request], rates_mbit: list[float]) -> list[dict]:
    """The whole burst on faster and slower links: how the gain depends on the offered load."""
    total = sum(r.size for r in burst)
    rows = []
    for mbit in rates_mbit:
        link = mbit * 1e6 / 8
        avg = {
            name: mean_completion(burst, run(burst, link))
            for name, run in (("fifo", run_fifo), ("gfair", run_gfair), ("fop", run_fop))
        }
        rows.append(
            {
                "link_mbit_s": mbit,
                "offered_load": total / (link * (burst[-1].arrival - burst[0].arrival)),
                "avg_completion_s": avg,
                "fop_vs_fifo": avg["fop"] / avg["fifo"],
                "fop_vs_gfair": avg["fop"] / avg["gfair"],
            }
        )
    return rows


def largest_files(
    burst: list[Request], sched_fop: Schedule, sched_fifo: Schedule, top: int = 5
) -> list[dict]:
    """Wait of the biggest files: under FOP they go later, but they do go."""
    biggest = sorted(burst, key=lambda r: -r.size)[:top]
    return [
        {
            "size_mb": round(r.size / 1e6, 1),
            "arrival_s": round(r.arrival, 1),
            "wait_fifo_s": round(sched_fifo[r.op_id][0] - r.arrival, 1),
            "wait_fop_s": round(sched_fop[r.op_id][0] - r.arrival, 1),
        }
        for r in biggest
    ]


COMPLETION_COLUMNS = ["avg FIFO (s)", "avg G-Fair (s)", "avg FOP (s)", "FOP/FIFO", "FOP/G-Fair"]


def _completion_cells(row: dict) -> list[str]:
    """Average completion under each policy, then FOP's against the other two."""
    a = row["avg_completion_s"]
    return [
        f"{a['fifo']:.0f}",
        f"{a['gfair']:.0f}",
        f"{a['fop']:.0f}",
        f"{row['fop_vs_fifo']:.1%}",
        f"{row['fop_vs_gfair']:.1%}",
    ]


def markdown(result: dict) -> str:
    lines = [
        "# FOP vs FIFO and G-Fair on a 2,002-file download burst (50 Mbit/s relay)",
        "",
        f"Workload seed {result['seed']}: {result['workload']['files']} files, "
        f"{result['workload']['total_bytes'] / 1e9:.1f} GB, median {result['workload']['median_bytes'] / 1e3:.0f} kB, "
        f"largest {result['workload']['max_bytes'] / 1e9:.2f} GB, arriving within 10 min.",
        "",
        *result_files.table(
            ["ops", *COMPLETION_COLUMNS, "longest large-file wait FIFO (s)", "FOP (s)"],
            "rrrrrrrr",
            (
                [
                    row["ops"],
                    *_completion_cells(row),
                    f"{row['longest_large_wait_s']['fifo']:.0f}",
                    f"{row['longest_large_wait_s']['fop']:.0f}",
                ]
                for row in result["rows"]
            ),
        ),
        "",
        "Largest files of the burst (all ops):",
        "",
        *result_files.table(
            ["size (MB)", "arrival (s)", "wait FIFO (s)", "wait FOP (s)"],
            "rrrr",
            ([f["size_mb"], f["arrival_s"], f["wait_fifo_s"], f["wait_fop_s"]] for f in result["largest"]),
        ),
        "",
        "Same burst, other link rates (offered load = burst bytes / (link rate x 10 min)). A slower link is",
        "the same as larger files: FOP's gain grows with the spread of transfer times against the spread of",
        "arrival times, and vanishes once the link keeps up (FOP is non-preemptive, like FIFO).",
        "",
        *result_files.table(
            ["link (Mbit/s)", "offered load", *COMPLETION_COLUMNS],
            "rrrrrrr",
            (
                [f"{row['link_mbit_s']:.0f}", f"{row['offered_load']:.2f}", *_completion_cells(row)]
                for row in result["load_sweep"]
            ),
        ),
    ]
    if result.get("across_seeds"):
        s = result["across_seeds"]
        lines += [
            "",
            f"Across {s['seeds']} workload seeds, all 2,002 ops: FOP/FIFO {s['fop_vs_fifo_mean']:.1%} "
            f"(min {s['fop_vs_fifo_min']:.1%}, max {s['fop_vs_fifo_max']:.1%}), FOP/G-Fair {s['fop_vs_gfair_mean']:.1%} "
            f"(min {s['fop_vs_gfair_min']:.1%}, max {s['fop_vs_gfair_max']:.1%}).",
        ]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = sim_cli.parser(__doc__)
    parser.add_argument("--seeds", type=int, default=5, help="extra workload seeds for the summary line")
    args = parser.parse_args()

    burst = download_burst(args.seed)
    rows = evaluate(burst)
    result = {
        "seed": args.seed,
        "link_mbit_s": LINK_BPS * 8 / 1e6,
        "workload": describe(burst),
        "rows": rows,
        "largest": largest_files(burst, run_fop(burst), run_fifo(burst)),
        "load_sweep": load_sweep(burst, [5, 10, 25, 50, 100, 200, 400]),
    }
    finals = [evaluate(download_burst(s))[-1] for s in range(args.seed, args.seed + args.seeds)]
    if finals:
        ff, fg = [r["fop_vs_fifo"] for r in finals], [r["fop_vs_gfair"] for r in finals]
        result["across_seeds"] = {
            "seeds": len(finals),
            "fop_vs_fifo_mean": statistics.fmean(ff),
            "fop_vs_fifo_min": min(ff),
            "fop_vs_fifo_max": max(ff),
            "fop_vs_gfair_mean": statistics.fmean(fg),
            "fop_vs_gfair_min": min(fg),
            "fop_vs_gfair_max": max(fg),
        }
    text = markdown(result)
    print(text)
    result_files.write("sim_fop", result, text, args.out)


if __name__ == "__main__":
    main()
