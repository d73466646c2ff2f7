"""Multi-source download of erasure-coded files over emulated per-instance links (seed 000 §III-B).

Each instance is a bucket of the local cloud in its own region, reached through its own emulated
link (bench.wan.SpawnedWanLink: rate and RTT per instance). A file is coded with the default code
for the instance count (RS(3,2) on three, RS(5,3) on five), its blocks placed by the ring, and
downloaded by the client's own fetcher (hycloud.transfer.coded) three ways:

  multi-source  the planner's plan (eq. 3/5, plan_fast) on the rates and set-up times (the
                first answer's wait) a previous multi-source download (planned on the links'
                nominal rates) measured per instance, as the client plans on its measurements;
                rebalancing on
  round-robin   k holders per chunk in turn, whatever their speed, no rebalancing
  best single   the whole file replicated on the fastest instance, fetched from it alone

and compared with the plan's predicted time and the exact optimum of the same program (scipy
MILP). Peers run in the same process one after the other; storage overhead is n/k.

Run:  python bench/geo_bench.py [--sizes 64 256] [--setups three five]
Needs the local cloud running (infra/local/deploy.py starts it; HYCLOUD_LOCAL_PORT as usual).
Writes bench/results/geo.json and geo.md.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import os
import sys
import time
from collections import deque
from functools import cache
from pathlib import Path

import boto3

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "client"))
sys.path.insert(0, str(ROOT / "layers" / "core"))

import result_files  # noqa: E402

from bench.wan import SpawnedWanLink, session_through  # noqa: E402
from hycloud.transfer.coded import Fetcher  # noqa: E402
from hycloud.transfer.config import DEFAULT as TRANSFER  # noqa: E402
from hycloud_core.codec.erasure import choose_params, decode_chunk, encode_stream  # noqa: E402
from hycloud_core.codec.layout import Block, Chunk, CodedLayout, block_key  # noqa: E402
from hycloud_core.control.planner import PlanProblem, plan_exact, plan_fast  # noqa: E402
from hycloud_core.placement.ring import HashRing  # noqa: E402
from infra.local import deploy as local  # noqa: E402

MiB = 1024 * 1024
CHUNK = 2 * MiB
STREAMS = TRANSFER.streams_per_instance  # the client's own setting
# (region, Mbit/s, RTT ms)
SETUPS = {
    "three": [("us-east-1", 50, 40), ("us-west-2", 20, 100), ("eu-west-1", 10, 200)],
    "five": [
        ("us-east-1", 50, 40),
        ("us-west-2", 40, 80),
        ("eu-west-1", 20, 100),
        ("ap-southeast-1", 10, 150),
        ("sa-east-1", 5, 200),
    ],
}


@cache
def _s3(region: str):
    return boto3.client(
        "s3",
        endpoint_url=local.cloud_env()["AWS_ENDPOINT_URL"],
        region_name=region,
        aws_access_key_id="test",
        aws_secret_access_key="test",
    )


def _bucket(region: str) -> str:
    return f"hycloud-geo-bench-{region}"


def _store(data: bytes, regions: list[str], n: int, k: int) -> CodedLayout:
    """Code `data`, place by the ring and store every block in its region's bench bucket."""
    ring = HashRing(regions)
    chunks = []
    for chunk in encode_stream(io.BytesIO(data), n, k, CHUNK):
        blocks = []
        for block, region in zip(chunk.blocks, ring.place(chunk.key, n), strict=True):
            digest = hashlib.sha256(block).hexdigest()
            _s3(region).put_object(Bucket=_bucket(region), Key=block_key(digest), Body=block)
            blocks.append(Block(digest, len(block), region))
        chunks.append(Chunk(chunk.length, chunk.key, blocks))
    return CodedLayout(n, k, CHUNK, chunks, sorted(regions))


def _urls(layout: CodedLayout) -> dict[str, str]:
    return {
        f"{ci}/{bi}": _s3(b.instance).generate_presigned_url(
            "get_object", Params={"Bucket": _bucket(b.instance), "Key": block_key(b.hash)}, ExpiresIn=3600
        )
        for ci, c in enumerate(layout.chunks)
        for bi, b in enumerate(c.blocks)
    }


def _problem(
    layout: CodedLayout, rate: dict[str, float], setup: dict[str, float] | None = None
) -> tuple[PlanProblem, list[str]]:
    names = sorted(rate)
    index = {r: i for i, r in enumerate(names)}
    problem = PlanProblem(
        block_sizes=[c.blocks[0].size for c in layout.chunks],
        holders=[frozenset(index[b.instance] for b in c.blocks) for c in layout.chunks],
        k=layout.k,
        cost=[1.0 / rate[r] for r in names],
        setup=[setup.get(r, 0.0) for r in names] if setup else (),
    )
    return problem, names


def _queues_of(assignment, names: list[str], layout: CodedLayout) -> dict[str, deque]:
    queues: dict[str, deque] = {
        r: deque() for r in sorted({b.instance for c in layout.chunks for b in c.blocks})
    }
    for ci, chosen in enumerate(assignment):
        for r in chosen:
            queues[names[r] if isinstance(r, int) else r].append(ci)
    return queues


def _round_robin(layout: CodedLayout) -> dict[str, deque]:
    assignment = []
    for ci, chunk in enumerate(layout.chunks):
        holders = [b.instance for b in chunk.blocks]
        assignment.append([holders[(ci + j) % len(holders)] for j in range(layout.k)])
    return _queues_of(assignment, [], layout)


def _fetch(
    layout: CodedLayout, queues: dict[str, deque], sessions: dict, rebalance: bool
) -> tuple[float, dict]:
    urls = _urls(layout)
    fetcher = Fetcher(layout, urls, queues, lambda r, url: sessions[r].get(url, timeout=(5, 600)), rebalance)

    def check(ci: int, blocks: list[bytes]) -> None:
        if hashlib.sha256(decode_chunk(blocks)).hexdigest() != layout.chunks[ci].key:
            raise RuntimeError(f"chunk {ci} corrupt")

    started = time.perf_counter()
    fetcher.start(check, STREAMS)
    fetcher.wait()
    seconds = time.perf_counter() - started
    if fetcher.error or fetcher.written < len(layout.chunks):
        raise RuntimeError(f"download failed: {fetcher.error}")
    served = {r: s.blocks for r, s in fetcher.stats.items()}
    rates = {r: s.rate for r, s in fetcher.stats.items() if s.rate}
    setup = {r: s.setup_s for r, s in fetcher.stats.items() if s.setup_s is not None}
    return seconds, {
        "served_blocks": served,
        "moved_blocks": fetcher.moved,
        "dropped": sorted(fetcher.dead),
        "errors": {r: s.errors for r, s in fetcher.stats.items() if s.errors},
        "retried": {r: s.retried for r, s in fetcher.stats.items() if s.retried},
        "rates": rates,
        "setup_s": setup,
    }


def run_setup(name: str, size_mib: int) -> dict:
    links = SETUPS[name]
    regions = [r for r, _, _ in links]
    rate = {r: mbps * 1e6 / 8 for r, mbps, _ in links}  # bytes/s
    n, k = choose_params(len(regions))
    for region in regions:
        s3 = _s3(region)
        config = (
            {} if region == "us-east-1" else {"CreateBucketConfiguration": {"LocationConstraint": region}}
        )
        try:
            s3.create_bucket(Bucket=_bucket(region), **config)
        except s3.exceptions.BucketAlreadyOwnedByYou:
            pass
    data = os.urandom(size_mib * MiB)
    coded = _store(data, regions, n, k)
    best = max(regions, key=rate.__getitem__)
    single = _store(data, [best], 1, 1)
    port = int(local.cloud_env()["AWS_ENDPOINT_URL"].rsplit(":", 1)[1])
    spawned = {
        r: SpawnedWanLink(
            ("127.0.0.1", port), down_mbps=mbps, up_mbps=None, rtt_ms=rtt, max_seconds=3600
        ).start()
        for r, mbps, rtt in links
    }
    try:
        sessions = {r: session_through(link, pool_maxsize=8) for r, link in spawned.items()}
        robin, _ = _fetch(coded, _round_robin(coded), sessions, False)
        # like the client: a first download planned on what is known (here the nominal rates),
        # then the measured one planned on the rates that download measured per instance
        nominal, names = _problem(coded, rate)
        _, previous = _fetch(coded, _queues_of(plan_fast(nominal).assignment, names, coded), sessions, True)
        measured_rates = {r: previous["rates"].get(r, rate[r]) for r in rate}
        problem, names = _problem(coded, measured_rates, previous["setup_s"])
        fast, exact = plan_fast(problem), plan_exact(problem)
        planned = _queues_of(fast.assignment, names, coded)
        planned_blocks = {r: len(q) for r, q in planned.items()}
        measured, detail = _fetch(coded, planned, sessions, True)
        single_s, _ = _fetch(single, {best: deque(range(len(single.chunks)))}, sessions, False)
    finally:
        for link in spawned.values():
            link.close()
        for layout in (coded, single):
            for chunk in layout.chunks:
                for b in chunk.blocks:
                    _s3(b.instance).delete_object(Bucket=_bucket(b.instance), Key=block_key(b.hash))
    return {
        "setup": name,
        "size_mib": size_mib,
        "links": [{"region": r, "mbps": m, "rtt_ms": t} for r, m, t in links],
        "code": [n, k],
        "overhead": n / k,
        "multi_source_s": measured,
        "round_robin_s": robin,
        "best_single_s": single_s,
        "best_single": best,
        "predicted_s": fast.makespan,
        "predicted_nominal_s": plan_fast(nominal).makespan,  # the same program on the links' nominal rates
        "planning_rates": {r: 1 / problem.cost[i] for i, r in enumerate(names)},
        "planning_setup_s": previous["setup_s"],
        "optimum_s": exact.makespan,
        "plan_gap": fast.makespan / exact.makespan - 1,
        "measured_vs_predicted": measured / fast.makespan - 1,
        "reduction_vs_single": 1 - measured / single_s,
        "reduction_vs_round_robin": 1 - measured / robin,
        "planned_blocks": planned_blocks,
        "load_avg_1m": os.getloadavg()[0],  # the machine is shared: read every figure beside it
        **detail,
    }


def report(rows: list[dict]) -> str:
    head = (
        "| setup | size | RS(n,k) | n/k | multi-source s | predicted s | optimum s | plan gap | measured vs plan "
        "| best single s | vs single | round-robin s | vs round-robin | predicted on nominal rates s | load |\n"
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n"
    )
    lines = [
        f"| {r['setup']} | {r['size_mib']} MiB | RS({r['code'][0]},{r['code'][1]}) | {r['overhead']:.2f} "
        f"| {r['multi_source_s']:.1f} | {r['predicted_s']:.1f} | {r['optimum_s']:.1f} | {r['plan_gap']:+.1%} "
        f"| {r['measured_vs_predicted']:+.1%} | {r['best_single_s']:.1f} ({r['best_single']}) "
        f"| {r['reduction_vs_single']:.1%} less | {r['round_robin_s']:.1f} | {r['reduction_vs_round_robin']:.1%} less "
        f"| {r['predicted_nominal_s']:.1f} | {r.get('load_avg_1m', float('nan')):.1f} |"
        for r in rows
    ]
    setups = "\n".join(
        f"- {name}: " + ", ".join(f"{r} {m} Mbit/s RTT {t} ms" for r, m, t in links)
        for name, links in SETUPS.items()
    )
    dropped = [
        f"- {r['setup']} {r['size_mib']} MiB: {', '.join(r['dropped'])} dropped mid-transfer (two connection "
        f"failures in a row), {r['moved_blocks']} blocks served by instances the plan did not pick; "
        f"errors: {r.get('errors')}"
        for r in rows
        if r.get("dropped")
    ]
    return (
        "# Multi-source download of coded files (bench/geo_bench.py)\n\n"
        f"Links (one emulated link per instance, down rate and RTT):\n{setups}\n\n"
        + head
        + "\n".join(lines)
        + "\n"
        + ("\n" + "\n".join(dropped) + "\n" if dropped else "")
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[64, 256], help="file sizes, MiB")
    parser.add_argument("--setups", nargs="+", default=list(SETUPS), choices=list(SETUPS))
    args = parser.parse_args()
    local.start()
    rows = []
    for size in args.sizes:
        for name in args.setups:
            row = run_setup(name, size)
            rows.append(row)
            print(report([row]).splitlines()[-1], row["planned_blocks"], row["served_blocks"], flush=True)
    command = " ".join(["python bench/geo_bench.py", *sys.argv[1:]])
    text = (
        report(rows) + f"\nCommand: `{command}` (local cloud deployed; 1-minute load in the last column).\n"
    )
    print(text)
    result_files.write("geo", {"rows": rows, "streams_per_instance": STREAMS, "chunk_bytes": CHUNK}, text)


if __name__ == "__main__":
    main()
