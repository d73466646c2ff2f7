"""Finding what changed in a tree: the Merkle exchange over the API next to a full listing.

A tree of small files (default 1,000 in 3 levels of folders) is uploaded to the local deployment
and mirrored locally. Then, for equal trees and after 1% of the cloud's files changed, the time
and requests the level-by-level exchange (`POST /v1/merkle/children`, client tree from
`merkle.tree_from_directory`) takes to find the differences, beside walking the folder with
`GET /v1/dirs` (the listing a listing-and-compare sync reads before it can compare anything).
"Cold" is the first exchange after the changes (the route recomputes the stale folder hashes),
"warm" the next. Runs interleave; the table shows medians.

    .venv/bin/python bench/merkle_bench.py [--files 1000] [--repeat 5]

Starts the local cloud and deploys if needed; writes bench/results/merkle.json and merkle.md.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "layers" / "core"), str(ROOT / "client")]
import result_files  # noqa: E402

from hycloud.admin import create_user  # noqa: E402
from hycloud.sdk import HyCloud  # noqa: E402
from hycloud_core.merkle import LevelExchange, Node, tree_from_directory  # noqa: E402
from infra.local import deploy as local  # noqa: E402

TOP = "/t"


def rel_path(i: int) -> str:
    return f"d{i % 10}/e{i // 10 % 10}/f{i:05d}.txt"


def upload(hc: HyCloud | None, local_dir: Path, files: list[int], version: str) -> None:
    """Write the files' new version to `local_dir` and, unless `hc` is None, to the cloud."""

    def put(i: int) -> None:
        data = f"file {i} {version}\n".encode()
        (local_dir / rel_path(i)).parent.mkdir(parents=True, exist_ok=True)
        (local_dir / rel_path(i)).write_bytes(data)
        if hc is not None:
            hc.put_bytes(f"{TOP}/{rel_path(i)}", data, parents=True)

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(put, files))


def exchange(hc: HyCloud, tree: Node) -> dict:
    t0, ex, requests = time.perf_counter(), LevelExchange(tree, scope=TOP), 0
    while not ex.done:
        ex.receive(hc.merkle_children(ex.request()))
        requests += 1
    diff = ex.result()
    return {
        "ms": (time.perf_counter() - t0) * 1000,
        "requests": requests,
        "rounds": diff.rounds,
        "found": len(diff),
    }


def listing(hc: HyCloud) -> dict:
    t0, requests, files, folders = time.perf_counter(), 0, 0, [TOP]
    while folders:
        folder = folders.pop()
        requests += 1
        for entry in hc.iter_dir(folder):
            if entry["type"] == "dir":
                folders.append(entry["path"])
            else:
                files += 1
    return {"ms": (time.perf_counter() - t0) * 1000, "requests": requests, "files": files}


def median_row(runs: list[dict]) -> dict:
    return {k: statistics.median(r[k] for r in runs) for k in runs[0]}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    outputs, _ = local.running_deployment()
    hc = HyCloud(outputs["LocalApiUrl"], create_user(outputs["TableName"], f"bench-{uuid.uuid4().hex[:8]}"))
    changed = max(1, args.files // 100)
    runs: dict[str, list[dict]] = {k: [] for k in ("equal", "cold", "warm", "listing")}
    with tempfile.TemporaryDirectory() as tmp:
        mirror = Path(tmp) / "t"
        upload(hc, mirror, list(range(args.files)), "v0")
        tree = tree_from_directory(mirror, prefix=TOP)
        first = exchange(hc, tree)  # every folder's hash computed once, after the upload
        for rep in range(args.repeat):
            runs["equal"].append(exchange(hc, tree))
            runs["listing"].append(listing(hc))
            picked = [(rep * 7919 + k * 101) % args.files for k in range(changed)]
            upload(hc, Path(tmp) / f"cloud{rep}", picked, f"v{rep + 1}")  # the cloud's copy changes
            runs["cold"].append(exchange(hc, tree))
            runs["warm"].append(exchange(hc, tree))
            upload(None, mirror, picked, f"v{rep + 1}")  # and the mirror catches up
            tree = tree_from_directory(mirror, prefix=TOP)
            assert runs["cold"][-1]["found"] == len(set(picked)), runs["cold"][-1]
    rows = {k: median_row(v) for k, v in runs.items()}
    lines = [
        f"{args.files} files in 3 levels of folders, {changed} changed ({args.repeat} runs, medians)",
        "",
        "| method | case | ms | requests | rounds | differences found |",
        "| --- | --- | ---: | ---: | ---: | ---: |",
    ]
    for case in ("equal", "cold", "warm"):
        r = rows[case]
        label = {"equal": "trees equal", "cold": "1% changed, first", "warm": "1% changed, again"}[case]
        lines.append(
            f"| Merkle exchange | {label} | {r['ms']:.0f} | {r['requests']:.0f} | {r['rounds']:.0f} | {r['found']:.0f} |"
        )
    r = rows["listing"]
    lines.insert(
        4,
        f"| Merkle exchange | trees equal, first after the upload | {first['ms']:.0f} | "
        f"{first['requests']} | {first['rounds']} | {first['found']} |",
    )
    lines.append(
        f"| full listing (GET /v1/dirs) | any | {r['ms']:.0f} | {r['requests']:.0f} | | (lists {r['files']:.0f} files) |"
    )
    doc = {
        "first": first,
        "files": args.files,
        "changed": changed,
        "repeat": args.repeat,
        "runs": runs,
        "medians": rows,
    }
    result_files.write("merkle", doc, "\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
