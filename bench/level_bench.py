"""The zstd level of version-aware deltas chosen by eq. 2 (level.py) against fixed levels 3 and 19.

    python bench/level_bench.py [--series typescript,openssl] [--versions 3]

For each consecutive pair of a release series (bench/delta_bench.py's, as plain .tar), one run
encodes the version-aware delta (zstd patch-from, versioned.encode) at level 3, at level 19 and at
the level eq. 2 chooses, on this machine, and times each encode (the fastest of 3 runs for the
short ones). It is a local computation: the
bytes are the real delta's, the compression time is measured here (it stands for the cloud's
delta job: LocalStack runs that job on this same CPU), and the link's part is modelled as one RTT
plus the delta's bytes over the link's rate. Total = compress + RTT + bytes / rate, at both of the
issue's links (50 Mbit/s + 100 ms, 10 Mbit/s + 200 ms).

The adaptive choice is the client's: level.choose with the link's rate, the default table (the
cloud's CPU) and the γ the client learned from the previous pair of the series (its learn_job
keeps γ = 1 - delta/size); the first pair of a series, with nothing learned yet, uses level.GAMMA
(0.98). A third, slower link (1 Mbit/s + 300 ms) shows where a higher level pays; the issue's bound
is checked at its two links. Results: bench/results/level.md and level.json.
"""

from __future__ import annotations

import argparse
import io
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT.parent / "layers" / "core"))
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT.parent))

import result_files  # noqa: E402
from delta_bench import SERIES  # noqa: E402

from hycloud_core.delta import level, versioned  # noqa: E402

LINKS = {"50 Mbit/s + 100 ms": (50e6 / 8, 0.100), "10 Mbit/s + 200 ms": (10e6 / 8, 0.200)}
# beyond the two links: a slow one, where eq. 2 says a higher level pays
SLOW = {"1 Mbit/s + 300 ms": (1e6 / 8, 0.300)}
ALL_LINKS = {**LINKS, **SLOW}
FIXED = (3, 19)
REPEAT, REPEAT_UNDER_S = 3, 5.0
MAX_RATIO = 1.10  # the bound: adaptive within 10% of the better fixed level


def encode(old: bytes, new: bytes, lv: int) -> tuple[int, float]:
    """(delta bytes, seconds) of the version-aware delta at level `lv`: the fastest of up to REPEAT
    runs while they take under REPEAT_UNDER_S (on a shared machine one short run can be twice as long)."""
    best, size = float("inf"), 0
    for _ in range(REPEAT):
        started = time.perf_counter()
        size = versioned.encode(io.BytesIO(old), len(old), io.BytesIO(new), len(new), io.BytesIO(), level=lv)
        best = min(best, time.perf_counter() - started)
        if best > REPEAT_UNDER_S:
            break
    return size, best


def total(measured: tuple[int, float], rate: float, rtt: float) -> float:
    size, seconds = measured
    return seconds + rtt + size / rate


def measure_pair(series: str, a: tuple[str, Path], b: tuple[str, Path], gamma: float) -> dict:
    old, new = a[1].read_bytes(), b[1].read_bytes()
    runs: dict[int, tuple[int, float]] = {lv: encode(old, new, lv) for lv in FIXED}
    row = {"series": series, "pair": f"{a[0]} -> {b[0]}", "size": len(new), "gamma_used": gamma, "links": {}}
    for name, (rate, rtt) in ALL_LINKS.items():
        chosen = level.choose(len(new), rate, rtt, level.DEFAULT_TABLE, gamma)
        if chosen not in runs:
            runs[chosen] = encode(old, new, chosen)
        times = {lv: total(runs[lv], rate, rtt) for lv in (*FIXED, chosen)}
        best_fixed = min(times[lv] for lv in FIXED)
        row["links"][name] = {
            "chosen": chosen,
            "bytes": {str(lv): runs[lv][0] for lv in (*FIXED, chosen)},
            "compress_s": {str(lv): runs[lv][1] for lv in (*FIXED, chosen)},
            "total_s": {str(lv): t for lv, t in times.items()},
            "ratio_to_best_fixed": times[chosen] / best_fixed,
        }
    row["gamma_measured"] = 1 - runs[3][0] / len(new)  # what the client learns for the next pair
    return row


def run_series(name: str, count: int) -> list[dict]:
    versions, fetch = SERIES[name]
    files = [(v, fetch(v)) for v in versions(count)]
    rows, gamma = [], level.GAMMA
    for a, b in zip(files, files[1:], strict=False):
        row = measure_pair(name, a, b, gamma)
        print(render_row(row), flush=True)
        rows.append(row)
        gamma = row["gamma_measured"]
    return rows


def render_row(row: dict) -> str:
    cells = []
    for link in row["links"].values():
        c, b, t = link["chosen"], link["bytes"], link["total_s"]
        cells.append(
            f"{b['3']:,} B {t['3']:.2f} s | {b['19']:,} B {t['19']:.2f} s | "
            f"L{c}: {b[str(c)]:,} B {t[str(c)]:.2f} s | {link['ratio_to_best_fixed']:.2f}"
        )
    head = f"| {row['series']} {row['pair']} | {row['size'] / 1e6:.1f} MB | γ {row['gamma_used']:.3f} | "
    return head + " | ".join(cells) + " |"


def worst_ratio(rows: list[dict]) -> float:
    """The largest adaptive / better-fixed ratio at the issue's two links."""
    return max(r["links"][name]["ratio_to_best_fixed"] for r in rows for name in LINKS)


def report(rows: list[dict]) -> str:
    links = list(ALL_LINKS)
    worst = worst_ratio(rows)
    lines = [
        "# Adaptive zstd level of version-aware deltas against fixed levels 3 and 19",
        "",
        "Local computation (bench/level_bench.py): real delta bytes and compression time measured on this",
        "machine (2 shared cores; it runs LocalStack's delta jobs too), link time modelled as RTT + bytes /",
        "rate. Total = compress + RTT + bytes / rate. Adaptive: level.choose with the link's rate, the",
        "default table and the γ learned from the series' previous pair (level.GAMMA, 0.98, on a series'",
        "first pair). The third link is beyond the issue's two: the bound is checked at those two.",
        "Ratio: adaptive total over the better fixed level's total at that link (bound: 1.10).",
        "The '(local cloud)' row ran the delta download through the running local cloud (LocalStack on",
        "this CPU): its time is the request's wall time on 127.0.0.1 (job + fetch), plus the modelled link.",
        "",
        "Reading: level 19 sends 19-52% fewer bytes than level 3, but on this CPU its patch-from costs",
        "5-26 s for 24-35 MB, against at most 0.6 s of link time saved at 10 Mbit/s: eq. 2 keeps level 3",
        "at both of the issue's links, and moves to a higher level only on slower links (1 Mbit/s: level 6",
        "on three pairs, within 5% of the better fixed level). Using the rsync-style γ of 0.9 on a",
        "series' first pair (an earlier run) counted 5x the bytes and chose level 6 where level 3 was",
        "12% faster at 10 Mbit/s (OpenSSL 3.5.2 -> 3.5.4): hence level.GAMMA = 0.98 until a γ is learned.",
        "",
        "| pair | size | γ used | " + " | ".join(f"{n}: L3 | L19 | adaptive | ratio" for n in links) + " |",
        "|---|---|---|" + "---|---|---|---|" * len(links),
    ]
    lines += [render_row(r) for r in rows]
    lines += [
        "",
        f"Worst ratio of adaptive to the better fixed level at the issue's two links: {worst:.3f} "
        f"({'within' if worst <= MAX_RATIO else 'OVER'} the 1.10 bound).",
        "",
        f"Compression budget in the cloud: levels {level.MIN_LEVEL}-{level.MAX_LEVEL}, the estimated "
        f"compression time within {level.CPU_BUDGET:.0%} of the {level.JOB_TIMEOUT_S} s job timeout "
        f"({level.BUDGET_S:.0f} s), else the highest lower level that fits (level.cap).",
        "",
    ]
    return "\n".join(lines)


def cloud_pair(series: str, count: int, gamma: float) -> dict:
    """The series' last pair through the running local cloud: both versions put, then the
    version-aware delta download asked at level 3, 19 and each link's adaptive level. The request's
    wall time on 127.0.0.1 (the job in LocalStack, on this CPU, and the delta fetched) is measured;
    the link's part is modelled as above (one RTT + the delta's bytes / rate). A level-3 request may
    be answered by the delta the commit precomputed (the cloud's default level): as in real use."""
    import json
    import os
    import tempfile
    import uuid

    from hycloud.admin import create_user
    from hycloud.sdk import HyCloud
    from hycloud.transfer.delta import delta_download, delta_from_known
    from hycloud_core import content
    from infra.local import deploy as local

    os.environ.update(local.cloud_env())
    outputs = json.loads(local.OUTPUTS.read_text()).popitem()[1]
    sdk = HyCloud(outputs["LocalApiUrl"], create_user(outputs["TableName"], f"level-{uuid.uuid4().hex[:8]}"))
    versions, fetch = SERIES[series]
    (va, a), (vb, b) = [(v, fetch(v)) for v in versions(count)[-2:]]
    path, base_hash = f"/{series}.tar", content.hash_file(a)[0]
    for f in (a, b):
        sdk.put(f, path, via="direct")
    chosen = {
        name: level.choose(b.stat().st_size, r, t, level.DEFAULT_TABLE, gamma)
        for name, (r, t) in ALL_LINKS.items()
    }
    runs = {}
    with tempfile.TemporaryDirectory() as tmp:
        for lv in dict.fromkeys((*FIXED, *chosen.values())):
            started = time.perf_counter()
            file, ran = delta_from_known(sdk.http, path, base_hash, level=lv)
            delta_download(sdk.http, file, a, Path(tmp) / f"out{lv}", base_hash=base_hash, ran=ran)
            seconds = time.perf_counter() - started
            assert content.hash_file(Path(tmp) / f"out{lv}")[0] == file["content_hash"]
            runs[lv] = (ran[1]["delta_size"], seconds, ran[1].get("level"))
            print(
                f"cloud L{lv}: {runs[lv][0]:,} B in {seconds:.2f} s (job ran at level {runs[lv][2]})",
                flush=True,
            )
    links = {}
    for name, (rate, rtt) in ALL_LINKS.items():
        times = {lv: total(runs[lv][:2], rate, rtt) for lv in (*FIXED, chosen[name])}
        links[name] = {
            "chosen": chosen[name],
            "bytes": {str(lv): runs[lv][0] for lv in times},
            "wall_s": {str(lv): runs[lv][1] for lv in times},
            "total_s": {str(lv): t for lv, t in times.items()},
            "ratio_to_best_fixed": times[chosen[name]] / min(times[lv] for lv in FIXED),
        }
    return {
        "series": series,
        "pair": f"{va} -> {vb} (local cloud)",
        "size": b.stat().st_size,
        "gamma_used": gamma,
        "links": links,
    }


def rewrite(path: Path = result_files.RESULTS / "level.json") -> None:
    """Render level.md again from level.json (the report's text changed, not the figures)."""
    import json

    doc = json.loads(path.read_text())
    result_files.write("level", doc, report(doc["rows"]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--series", default="typescript,openssl")
    parser.add_argument("--versions", type=int, default=3, help="releases per series (pairs: one fewer)")
    parser.add_argument(
        "--cloud",
        default="openssl",
        help="series whose last pair also runs through the local cloud ('' for none)",
    )
    args = parser.parse_args()
    rows = [row for name in args.series.split(",") for row in run_series(name, args.versions)]
    if args.cloud:
        learned = [r["gamma_measured"] for r in rows if r["series"] == args.cloud][-2:-1] or [level.GAMMA]
        rows.append(cloud_pair(args.cloud, args.versions, learned[0]))
        print(render_row(rows[-1]), flush=True)
    worst = worst_ratio(rows)
    doc = {
        "links": {n: {"rate": r, "rtt": t} for n, (r, t) in ALL_LINKS.items()},
        "rows": rows,
        "worst_ratio": worst,
    }
    result_files.write("level", doc, report(rows))
    print(f"worst adaptive / better fixed: {worst:.3f}")


if __name__ == "__main__":
    main()
