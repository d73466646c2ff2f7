"""Requests and bytes saved by local redundant request elimination (seed 000 §III-C).

A synthetic one-hour session of one client, built from patterns editors and build tools
produce: a handful of documents autosaved every 20-60 s while being edited; a lock or swap
file created beside each document when it is opened and deleted when it is closed; a build
that makes a directory, writes objects into it and later removes the lot; and fresh files that
are kept. The controller reports overload in windows (on average 2 min of every 5), during
which the client holds requests in its ``LocalOperationQueue`` (journal on disk) and flushes
them as one batch when the window ends. Counted: requests and upload bytes that reach the
controller, with and without elimination, for several overload shares.
Usage: ``python bench/sim_elimination.py [--seed S]``.
"""

from __future__ import annotations

import random
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "layers" / "core"))

import result_files  # noqa: E402
import sim_cli  # noqa: E402

from hycloud_core.control.elimination import LocalOp  # noqa: E402
from hycloud_core.control.fop import OpKind  # noqa: E402
from hycloud_core.control.local_queue import LocalOperationQueue  # noqa: E402

SESSION_S = 3600.0


def session(rng: random.Random) -> list[tuple[float, LocalOp]]:
    ops: list[tuple[float, str, str, bool, int]] = []  # time, kind, path, creates, bytes
    for d in range(6):  # documents: open (lock), autosave while editing, close
        doc, lock = f"/docs/report{d}.odt", f"/docs/.~lock.report{d}.odt#"
        t = rng.uniform(0, SESSION_S * 0.7)
        end = t + rng.uniform(300, 1500)
        ops.append((t, "upload", lock, True, 100))
        while (t := t + rng.uniform(20, 60)) < end:
            ops.append((t, "upload", doc, False, rng.randint(200_000, 3_000_000)))
        ops.append((end, "delete", lock, False, 0))
    for b in range(4):  # builds: mkdir, objects, then clean
        t = rng.uniform(0, SESSION_S * 0.8)
        out = f"/src/build{b}"
        ops.append((t, "mkdir", out, False, 0))
        objs = [f"{out}/obj{i}.o" for i in range(rng.randint(10, 40))]
        for o in objs:
            ops.append((t := t + rng.uniform(0.5, 3), "upload", o, True, rng.randint(20_000, 400_000)))
        t += rng.uniform(30, 300)
        for o in objs:
            ops.append((t := t + 0.05, "delete", o, False, 0))
        ops.append((t + 0.05, "rmdir", out, False, 0))
    for i in range(60):  # new files that stay
        ops.append(
            (
                rng.uniform(0, SESSION_S),
                "upload",
                f"/photos/img{i:03d}.jpg",
                True,
                rng.randint(1_000_000, 6_000_000),
            )
        )
    ops.sort(key=lambda o: o[0])
    return [
        (t, LocalOp(f"op{i:05d}", OpKind(kind), path, creates=creates, data={"bytes": size}))
        for i, (t, kind, path, creates, size) in enumerate(ops)
    ]


def overload_windows(rng: random.Random, share: float) -> list[tuple[float, float]]:
    windows, t = [], 0.0
    while t < SESSION_S:
        busy = rng.expovariate(1 / (300 * share)) if share > 0 else 0.0
        idle = rng.expovariate(1 / (300 * (1 - share)))
        windows.append((t + idle, t + idle + busy))
        t += idle + busy
    return windows


def replay(ops: list[tuple[float, LocalOp]], windows: list[tuple[float, float]]) -> dict[str, int]:
    sent: list[LocalOp] = []
    with tempfile.TemporaryDirectory() as tmp:
        queue = LocalOperationQueue(tmp, fsync=False)
        w = 0
        for t, op in ops:
            while w < len(windows) and windows[w][1] <= t:
                w += 1
                queue.set_congestion(False, False)
                batch = queue.ready_batch()
                sent += batch
                queue.confirm(o.op_id for o in batch)
            overloaded = w < len(windows) and windows[w][0] <= t
            queue.set_congestion(overloaded, False)
            sent += queue.submit(op)
        queue.set_congestion(False, False)
        sent += queue.ready_batch()
    return {"requests": len(sent), "upload_bytes": sum(o.data["bytes"] for o in sent)}


def main() -> None:
    parser = sim_cli.parser(__doc__)
    args = parser.parse_args()
    ops = session(random.Random(args.seed))
    base = {"requests": len(ops), "upload_bytes": sum(o.data["bytes"] for _, o in ops)}
    rows = []
    for share in (0.1, 0.2, 0.4, 0.6):
        got = replay(ops, overload_windows(random.Random(args.seed + 1), share))
        rows.append({"overload_share": share, **got})
    res = {"seed": args.seed, "without_elimination": base, "with_elimination": rows}
    lines = [
        "# Local redundant request elimination on a one-hour client session",
        "",
        f"{base['requests']} requests, {base['upload_bytes'] / 1e6:.0f} MB of uploads without elimination (seed {args.seed}).",
        "",
        *result_files.table(
            ["controller overloaded (share of time)", "requests sent", "saved", "upload MB sent", "saved"],
            "rrrrr",
            (
                [
                    f"{r['overload_share']:.0%}",
                    r["requests"],
                    f"{1 - r['requests'] / base['requests']:.1%}",
                    f"{r['upload_bytes'] / 1e6:.0f}",
                    f"{1 - r['upload_bytes'] / base['upload_bytes']:.1%}",
                ]
                for r in rows
            ),
        ),
    ]
    text = "\n".join(lines) + "\n"
    print(text)
    result_files.write("sim_elimination", res, text, args.out)


if __name__ == "__main__":
    main()
