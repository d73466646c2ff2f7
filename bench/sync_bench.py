"""Finding and sending what changed in a tree of 10,000 (or 100,000) files in 10 x 10 folders,
1% of its files edited, over the emulated client link (50 Mbit/s, RTT 100 ms), beside
`aws s3 sync`-style listing-and-compare, and against the lower bound (one round trip plus the
changed paths crossing the link once).

HyCloud: `hycloud sync` (the SDK function): a local scan against the kept hashes (only changed
files read), the one-round Merkle exchange (`POST /v1/merkle/diff`), then the changed files
sent; and, as a client before it, the level-by-level JSON exchange (`POST /v1/merkle/children`,
one request per level). Each row says where the time went: the client's scan, the exchange and
the cloud's part of it (its reads), the bytes each way and the link's share (RTTs + bytes).
Peers over the same link, against an S3 bucket in the same LocalStack holding the same tree:
  list      `aws s3 sync`'s compare: `list_objects_v2` pages, size and LastModified against each
            local file's size and mtime (no request per file), then `put_object` of what differs;
  list+head the same listing plus one `head_object` per object (10 threads), as a compare that
            checks stored metadata (e.g. a checksum) must (--head 1).
Both are seeded off the link: the cloud by a first `hycloud sync` (bundles), the bucket by
`put_object`; --workdir keeps trees, accounts and buckets for later runs.

    .venv/bin/python bench/sync_bench.py [--files 10000 100000] [--changed 0.01] [--repeats 3]
        [--head 0] [--workdir DIR] [--before OLD.json] [--down 50 --up 50 --rtt 100]
    .venv/bin/python bench/sync_bench.py --join A.json B.json   (runs made into one report)

Needs the local deployment (started if absent); writes bench/results/<--name: sync>.{json,md}.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sys
import tempfile
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "layers" / "core"), str(ROOT / "client")]
import boto3  # noqa: E402
import result_files  # noqa: E402
from botocore.config import Config  # noqa: E402

from bench.links import add_link_args, client_link, describe, measure, through  # noqa: E402
from hycloud.admin import create_account  # noqa: E402
from hycloud.sdk import HyCloud  # noqa: E402
from hycloud.sync import SyncOptions, sync  # noqa: E402
from hycloud.sync.filters import PathFilter  # noqa: E402
from hycloud_core.merkle import FileEntry, LevelExchange, Responder, build_tree, sketch  # noqa: E402
from infra.local import deploy as local  # noqa: E402

REMOTE = "/bench/tree"


def make_tree(root: Path, files: int, rng: random.Random) -> list[str]:
    """`files` files of 1-8 KiB in 10 x 10 folders: d0..d9/s0..s9/fNNNN.txt."""
    rels = [f"d{i % 10}/s{(i // 10) % 10}/f{i:05d}.txt" for i in range(files)]
    for rel in rels:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(rng.randbytes(rng.randint(1024, 8192)))
    return rels


def edit(root: Path, rels: list[str], fraction: float, rng: random.Random) -> list[str]:
    changed = sorted(rng.sample(rels, max(1, int(len(rels) * fraction))))
    later = time.time() + 86400  # newer than any upload of this run, for every peer in turn
    for rel in changed:
        (root / rel).write_bytes(rng.randbytes(rng.randint(1024, 8192)))
        os.utime(root / rel, (later, later))
    return changed


def seed_s3(s3, bucket: str, root: Path, rels: list[str]) -> None:
    def put(rel: str) -> None:
        s3.put_object(Bucket=bucket, Key=rel, Body=(root / rel).read_bytes())

    with ThreadPoolExecutor(16) as pool:
        list(pool.map(put, rels))


def s3_client(endpoint: str):
    return boto3.client(
        "s3",
        endpoint_url=endpoint,
        region_name="us-east-1",
        aws_access_key_id="test",
        aws_secret_access_key="test",
        config=Config(s3={"addressing_style": "path"}, max_pool_connections=16),
    )


def local_listing(root: Path) -> dict[str, tuple[int, float]]:
    out = {}
    for folder, _dirs, files in os.walk(root):
        for name in files:
            path = Path(folder) / name
            st = path.stat()
            out[path.relative_to(root).as_posix()] = (st.st_size, st.st_mtime)
    return out


def s3_compare(s3, bucket: str, root: Path, head: bool) -> tuple[list[str], int]:
    """What `aws s3 sync` would send: size differs or the local file is newer; and requests made."""
    remote: dict[str, tuple[int, float]] = {}
    requests = 0
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket):
        requests += 1
        for obj in page.get("Contents", []):
            remote[obj["Key"]] = (obj["Size"], obj["LastModified"].timestamp())
    if head:
        with ThreadPoolExecutor(10) as pool:
            list(pool.map(lambda key: s3.head_object(Bucket=bucket, Key=key), remote))
        requests += len(remote)
    changed = [
        rel
        for rel, (size, mtime) in local_listing(root).items()
        if rel not in remote or remote[rel][0] != size or mtime > remote[rel][1]
    ]
    return sorted(changed), requests


def s3_send(s3, bucket: str, root: Path, rels: list[str]) -> None:
    with ThreadPoolExecutor(10) as pool:
        list(
            pool.map(lambda rel: s3.put_object(Bucket=bucket, Key=rel, Body=(root / rel).read_bytes()), rels)
        )


def run(args) -> dict:
    """Every size in --files, each against its own account and bucket, one after another."""
    outputs, env = local.running_deployment()
    return {
        "link": describe(args),
        "command": " ".join(["bench/sync_bench.py", *sys.argv[1:]]),
        "repeats": args.repeats,
        "sizes": [run_size(args, files, outputs, env) for files in args.files],
    }


def _workdir(args, files: int) -> tuple[Path, tempfile.TemporaryDirectory | None]:
    """Where the tree, the sync state and the account are kept: --workdir keeps them for a later
    run (seeding 100,000 files takes many minutes), else a temporary folder."""
    if args.workdir:
        work = Path(args.workdir) / f"f{files}"
        work.mkdir(parents=True, exist_ok=True)
        return work, None
    temp = tempfile.TemporaryDirectory()
    return Path(temp.name), temp


def _seeded(args, files: int, work: Path, outputs: dict, env: dict) -> dict:
    """The tree, the cloud and the bucket holding it, made now or kept from an earlier run."""
    kept = work / "seeded.json"
    if kept.exists():
        seed = json.loads(kept.read_text())
        if seed["url"] == outputs["LocalApiUrl"] and seed["files"] == files:
            s3 = s3_client(env["AWS_ENDPOINT_URL"])  # earlier runs' edits: in the bucket, older than it
            earlier = sorted(
                {*seed.get("changed", []), *s3_compare(s3, seed["bucket"], work / "tree", False)[0]}
            )
            seed_s3(s3, seed["bucket"], work / "tree", earlier)
            for rel in earlier:
                os.utime(work / "tree" / rel, (seed["seeded_at"], seed["seeded_at"]))
            return seed
    tree, rng = work / "tree", random.Random(12)
    shutil.rmtree(tree, ignore_errors=True)
    account = create_account(outputs["TableName"], f"syncb-{uuid.uuid4().hex[:8]}")
    seed = {"url": outputs["LocalApiUrl"], "key": account["api_key"], "files": files}
    seed["rels"] = make_tree(tree, files, rng)
    started = time.perf_counter()
    direct = HyCloud(seed["url"], seed["key"])
    for _ in range(3):  # off the link, in bundles: uploads the tree and records the state
        first = sync(direct, tree, REMOTE, "push")
        print(f"seeding the cloud: {first['files']} files in {first['seconds']:.0f} s", flush=True)
        if not first["failed"]:
            break
    seed["seed_seconds"] = round(time.perf_counter() - started, 1)
    seed["bucket"] = f"sync-bench-{uuid.uuid4().hex[:8]}"
    s3_direct = s3_client(env["AWS_ENDPOINT_URL"])
    s3_direct.create_bucket(Bucket=seed["bucket"])
    # local files older than every object, as after `aws s3 sync` (100,000 puts take minutes)
    seed["seeded_at"] = time.time() - 60
    seed_s3(s3_direct, seed["bucket"], tree, seed["rels"])
    for rel in seed["rels"]:
        os.utime(tree / rel, (seed["seeded_at"], seed["seeded_at"]))
    print("seeded the bucket", flush=True)
    kept.write_text(json.dumps(seed))
    return seed


def run_size(args, files: int, outputs: dict, env: dict) -> dict:
    work, temp = _workdir(args, files)
    os.environ["HYCLOUD_STATE"] = str(work / "state.sqlite3")
    seed = _seeded(args, files, work, outputs, env)
    tree, rels, bucket = work / "tree", seed["rels"], seed["bucket"]
    direct = HyCloud(seed["url"], seed["key"])
    again = sync(direct, tree, REMOTE, "push")  # settles an earlier run's edits and mtimes
    assert not again["failed"], again["failed"][:3]
    unchanged = sync(direct, tree, REMOTE, "push", SyncOptions(dry_run=True))  # the scan journal alone
    assert unchanged["files"] == 0, unchanged["copied"][:5]
    client_side = client_work(tree, direct)
    port = int(env["AWS_ENDPOINT_URL"].rsplit(":", 1)[1])
    changed = edit(tree, rels, args.changed, random.Random(f"{files}-{time.time()}"))
    seed["changed"] = changed
    (work / "seeded.json").write_text(json.dumps(seed))
    rows: dict[str, dict] = {}
    with client_link(port, args) as link:
        with through(link):
            loads = [os.getloadavg()[0]]
            # the level-by-level exchange first: its runs are dry, the one-round row's last run sends
            for name, one_round in (
                ("hycloud sync, level-by-level JSON exchange", False),
                ("hycloud sync", True),
            ):
                rows[name] = _hycloud(args, link, seed, tree, changed, one_round)
        s3 = s3_client(link.url)
        peers = [("aws s3 sync-style list", False)] + [("list + head per object", True)] * args.head
        for name, head in peers:
            runs = args.repeats if not head else 1  # list + head takes minutes
            founds = [measure(link, lambda h=head: s3_compare(s3, bucket, tree, h)) for _ in range(runs)]
            found = _median(founds)
            assert found["result"][0] == changed, f"{name} found other changes"
            sent = measure(link, lambda: s3_send(s3, bucket, tree, changed))
            total = {"seconds": found["seconds"] + sent["seconds"], "bytes": found["bytes"] + sent["bytes"]}
            rows[name] = _row(found, total, found["result"][1], None)
            rows[name]["find_runs"] = [round(f["seconds"], 3) for f in founds]
        renamed = _renamed_rows(args, link, seed, tree, s3, bucket) if args.rename else None
        loads.append(os.getloadavg()[0])
    rows = {"hycloud sync": rows.pop("hycloud sync"), **rows}
    base = rows["hycloud sync"]["find_seconds"]
    for row in rows.values():
        row["find_vs_hycloud"] = row["find_seconds"] / base
    if temp is not None:
        temp.cleanup()
    return {
        "files": files,
        "changed": len(changed),
        "seed_seconds": seed["seed_seconds"],
        "unchanged_scan": {
            "seconds": unchanged["timings"]["scan_s"],
            "files_read": unchanged["hashed"],
            "folders_listed": unchanged["listed"],
        },
        "client_work": client_side,
        "renamed": renamed,
        "lower_bound": lower_bound(args, changed),
        "load_average_1min": [round(x, 2) for x in loads],
        "rows": rows,
    }


def _renamed_rows(args, link, seed: dict, tree: Path, s3, bucket: str) -> dict:
    """After renaming d3 (a tenth of the tree) to d3-renamed, everything else as both clouds
    hold it: finding what changed, each method (HyCloud with --delete: the rename is found as
    moves; the list peer sees every file of the folder as new). The folder is renamed back."""
    old, new = tree / "d3", tree / "d3-renamed"
    old.rename(new)
    try:
        moved = sorted(p.relative_to(tree).as_posix() for p in new.rglob("*") if p.is_file())
        rows: dict[str, dict] = {}
        options = SyncOptions(dry_run=True, delete=True)
        with through(link):
            wan = HyCloud(seed["url"], seed["key"])  # made here: its sessions go through the link
            wan.small_file_threshold  # noqa: B018 - the deployment's info, fetched before timing
            finds = [
                measure(link, lambda: sync(wan, tree, REMOTE, "push", options)) for _ in range(args.repeats)
            ]
        find = _median(finds)
        assert sorted(m["to"] for m in find["result"]["moved"]) == moved, "sync found other changes"
        rows["hycloud sync"] = {
            **_row(
                find, {"seconds": None, "bytes": None}, find["result"]["requests"], find["result"]["rounds"]
            ),
            "found": f"{len(find['result']['moved']):,} moves",
            "timings": find["result"]["timings"],
            "find_runs": [round(f["seconds"], 3) for f in finds],
        }
        founds = [measure(link, lambda: s3_compare(s3, bucket, tree, False)) for _ in range(args.repeats)]
        found = _median(founds)
        extra = set(found["result"][0]) - set(moved)  # edited earlier: newer locally than uploaded
        assert set(moved) <= set(found["result"][0]) and len(extra) <= len(seed["changed"]), (
            "the list differs"
        )
        rows["aws s3 sync-style list"] = {
            **_row(found, {"seconds": None, "bytes": None}, found["result"][1], None),
            "found": f"{len(moved):,} new files (as many to delete), and {len(extra)} edited earlier again",
            "find_runs": [round(f["seconds"], 3) for f in founds],
        }
        return {"folder": "d3 -> d3-renamed", "files": len(moved), "rows": rows}
    finally:
        new.rename(old)


def client_only(files: int, workdir: str | None) -> dict:
    """The client's part alone for a tree of `files` files (no cloud): the first scan (every file
    read), then `client_work` with nothing changed, against the scan journal."""
    work = Path(workdir or tempfile.mkdtemp()) / f"client{files}"
    tree = work / "tree"
    os.environ["HYCLOUD_STATE"] = str(work / "state.sqlite3")
    made_now = not (work / "made").exists()
    if made_now:
        shutil.rmtree(work, ignore_errors=True)
        make_tree(tree, files, random.Random(12))
        old = time.time() - 3600
        for folder, _dirs, names in os.walk(tree):
            for name in names:
                os.utime(os.path.join(folder, name), (old, old))
        (work / "made").write_text("")
    stub = argparse.Namespace(
        http=argparse.Namespace(base="http://client-only"), store=argparse.Namespace(user="u")
    )
    first = time.perf_counter()
    client_work(tree, stub, runs=1)  # the journal recorded (files read only on the very first run)
    first_s = time.perf_counter() - first
    time.sleep(2.1)  # past the racy window of what that scan saw
    first_s = round(first_s, 3) if made_now else None  # a kept tree's journal: not a first scan
    return {"files": files, "first_scan_s": first_s, "client_work": client_work(tree, stub)}


def client_work(tree: Path, client: HyCloud, runs: int = 5) -> dict:
    """The client's whole part of a sync of the unchanged tree, in-process (no request): the
    journal loaded, the scan, the Merkle tree and the exchange's request encoded; the median of
    `runs`, wall and CPU seconds (CPU: what the machine's other load does not inflate)."""
    from hycloud.sync import journal as journals
    from hycloud.sync.local_folders import ScannedFolders
    from hycloud.sync.scan import scan
    from hycloud.sync.state import SyncState, pair_id

    state = SyncState(pair_id(client.http.base, client.store.user, REMOTE, tree))
    keep, key = PathFilter.of(), journals.journal_key(REMOTE, (), ())
    rows = []
    for _ in range(runs):
        wall, cpu = time.perf_counter(), time.process_time()
        local = scan(
            tree,
            state,
            keep,
            False,
            journals.load(journals.journal_path(state.path, state.pair), key),
            REMOTE,
        )
        scanned = time.perf_counter()
        body = sketch.SketchExchange(ScannedFolders(REMOTE, local), REMOTE).request()
        rows.append(
            {
                "wall_s": time.perf_counter() - wall,
                "cpu_s": time.process_time() - cpu,
                "scan_wall_s": scanned - wall,
                "files_read": local.hashed,
                "folders_listed": local.listed,
                "request_bytes": len(body),
            }
        )
    state.close()
    row = sorted(rows, key=lambda r: r["wall_s"])[runs // 2]
    return {k: round(v, 4) if isinstance(v, float) else v for k, v in row.items()}


def lower_bound(args, changed: list[str]) -> dict:
    """Finding the changes cannot take less than one round trip (the cloud must be asked) plus the
    changed paths themselves crossing the link once, each with a separator."""
    path_bytes = sum(len(rel.encode()) + 1 for rel in changed)
    seconds = args.rtt / 1000 + path_bytes * 8 / (min(args.down, args.up) * 1e6)
    return {"seconds": round(seconds, 4), "path_bytes": path_bytes, "round_trips": 1}


def _hycloud(args, link, seed: dict, tree: Path, changed: list[str], one_round: bool) -> dict:
    """Finding (median of --repeats dry runs) and then sending, over the link, with its breakdown."""
    wan = HyCloud(seed["url"], seed["key"])
    wan.small_file_threshold  # noqa: B018 - the deployment's info, fetched before timing
    if not one_round:
        wan.merkle_diff = None  # type: ignore[method-assign,assignment] - as a client before it
    finds = []
    for _ in range(args.repeats):  # a dry run changes nothing: the same search each time
        wan.exchange_stats.clear()
        finds.append(measure(link, lambda: sync(wan, tree, REMOTE, "push", SyncOptions(dry_run=True))))
        finds[-1]["stats"] = dict(wan.exchange_stats)
        assert sorted(finds[-1]["result"]["copied"]) == changed, "sync found other changes"
    find = _median(finds)
    both = measure(link, lambda: sync(wan, tree, REMOTE, "push")) if one_round else None
    if both is not None:
        assert sorted(both["result"]["copied"]) == changed and not both["result"]["failed"]
    result = find["result"]
    row = _row(find, both or {"seconds": None, "bytes": None}, result["requests"], result["rounds"])
    row["find_runs"] = [round(f["seconds"], 3) for f in finds]
    row["breakdown"] = {
        "scan_s": result["timings"]["scan_s"],
        "files_read": result["hashed"],
        "exchange_s": result["timings"]["exchange_s"],
        "cloud_s": round(find["stats"].get("server_ms", 0) / 1000, 4) if one_round else None,
        "cloud_reads": find["stats"].get("reads") if one_round else None,
        "cloud_read_rounds": find["stats"].get("read_rounds") if one_round else None,
        "cloud_read_requests": find["stats"].get("read_requests") if one_round else None,
        "bytes_up": find["up"],
        "bytes_down": find["down"],
        "link_s": round(
            args.rtt / 1000 * result["requests"]
            + find["up"] * 8 / (args.up * 1e6)
            + find["down"] * 8 / (args.down * 1e6),
            4,
        ),
    }
    return row


def _median(runs: list[dict]) -> dict:
    """The run of median time (its bytes and result with it)."""
    return sorted(runs, key=lambda r: r["seconds"])[len(runs) // 2]


def _row(find: dict, total: dict, requests: int, rounds: int | None) -> dict:
    return {
        "find_seconds": round(find["seconds"], 3),
        "find_bytes": find["bytes"],
        "find_requests": requests,
        "rounds": rounds,
        "total_seconds": None if total["seconds"] is None else round(total["seconds"], 3),
        "total_bytes": total["bytes"],
    }


def markdown(doc: dict) -> str:
    lines = [
        f"# Sync: finding and sending 1% edited files ({doc['link']})",
        "",
        f"`.venv/bin/python {doc['command']}`. Finding: median of {doc['repeats']} runs (list + head: one). "
        "Aim (issue 33): HyCloud ≥ 10× faster to find than the `aws s3 sync`-style list. The lower "
        "bound is one round trip plus the changed paths crossing the link once. A 2-core machine "
        "shared with other work: the load average is given per size.",
    ]
    before = doc.get("before", {})
    if doc.get("notes"):
        lines += ["", *[f"- {note}" for note in doc["notes"]]]
    for size in doc["sizes"]:
        lines += _size_markdown(size, before.get(str(size["files"])))
    for files, old in before.items():
        if all(str(size["files"]) != files for size in doc["sizes"]):
            lines += _before_markdown(int(files), old)
    for only in doc.get("client_only", []):
        w = only["client_work"]
        lines += [
            "",
            f"## {only['files']:,} files: the client's part alone (in-process, no cloud)",
            "",
            (
                f"First scan (every file read, the journal written): {only['first_scan_s']:.1f} s. "
                if only["first_scan_s"] is not None
                else "The tree and its journal kept from an earlier run. "
            )
            + "A sync of the "
            f"unchanged tree (journal, scan, Merkle tree, request encoded; median of 5): "
            f"{w['wall_s'] * 1000:.0f} ms wall, {w['cpu_s'] * 1000:.0f} ms CPU (scan alone "
            f"{w['scan_wall_s'] * 1000:.0f} ms), {w['files_read']} files read, {w['folders_listed']} folders "
            f"listed, a {w['request_bytes']:,}-byte request.",
        ]
    if doc.get("exchange_bytes"):
        lines += _bytes_markdown(doc["exchange_bytes"], argparse.Namespace(**doc["link_args"]))
    return "\n".join(lines) + "\n"


def _before_markdown(files: int, old: dict) -> list[str]:
    """A size measured only before (the one-round exchange not run at it): that run's rows."""
    doc = old["doc"]
    lines = [
        "",
        f"## {files:,} files, {doc['changed']} changed: before only ({old['commit']})",
        "",
        f"`.venv/bin/python {doc['command']}` at that commit; seeded in {doc['seed_seconds']:.0f} s; "
        f"1-minute load average {min(doc['load_average_1min']):.1f}-{max(doc['load_average_1min']):.1f}.",
        "",
        *result_files.table(
            [
                "method",
                "find changes (s)",
                "find: bytes on link",
                "find: requests",
                "find: × HyCloud",
                "find + send (s)",
            ],
            "lrrrrr",
            (
                [
                    name,
                    f"{r['find_seconds']:.2f}",
                    f"{r['find_bytes']:,}",
                    f"{r['find_requests']:,}",
                    f"{r['find_vs_hycloud']:.1f}×",
                    f"{r['total_seconds']:.2f}",
                ]
                for name, r in doc["rows"].items()
            ),
        ),
    ]
    return lines


def _size_markdown(size: dict, before: dict | None) -> list[str]:
    bound = size["lower_bound"]
    lines = [
        "",
        f"## {size['files']:,} files, {size['changed']} changed",
        "",
        f"Seeded (off the link, in bundles) in {size['seed_seconds']:.0f} s; 1-minute load average "
        f"{min(size['load_average_1min']):.1f}-{max(size['load_average_1min']):.1f}. Lower bound: "
        f"1 round trip + {bound['path_bytes']:,} bytes of changed paths = **{bound['seconds']:.3f} s**.",
        "",
        "| method | find changes (s) | × lower bound | find: bytes on link | find: requests | "
        "find: × HyCloud | find + send (s) | find + send: bytes |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    rows = dict(size["rows"])
    if before:
        rows = {f"hycloud sync before ({before['commit']})": before["row"], **rows}
    base = size["rows"]["hycloud sync"]["find_seconds"]
    for name, r in rows.items():
        total = "-" if r.get("total_seconds") is None else f"{r['total_seconds']:.2f}"
        total_bytes = "-" if r.get("total_bytes") is None else f"{r['total_bytes']:,}"
        lines.append(
            f"| {name} | {r['find_seconds']:.2f} | {r['find_seconds'] / bound['seconds']:.1f}× | "
            f"{r['find_bytes']:,} | {r['find_requests']:,} | {r['find_seconds'] / base:.1f}× | "
            f"{total} | {total_bytes} |"
        )
    if before:
        loads = before["doc"].get("load_average_1min", [0])
        lines += [
            "",
            f"The first row is an earlier run ({before['commit']}) at a 1-minute load average of "
            f"{min(loads):.1f}-{max(loads):.1f}; the level-by-level row beside it is the same exchange "
            "in this run, at this run's load: compare the one-round exchange with that one.",
        ]
    lines += ["", "Where HyCloud's finding time goes (the median run):", ""]
    lines += [
        "| method | client scan (s) | files read | exchange (s) | of which cloud (s) | "
        "cloud: folders read (rounds) | bytes up / down | link: RTTs + bytes (s) | exchange's rest: client "
        "tree, compare, waits (s) | plan and state (s) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, r in size["rows"].items():
        b = r.get("breakdown")
        if not b:
            continue
        cloud = "-" if b["cloud_s"] is None else f"{b['cloud_s']:.3f}"
        reads = "-" if b["cloud_reads"] is None else f"{b['cloud_reads']} ({b['cloud_read_rounds']})"
        if b.get("cloud_read_requests") is not None:
            reads = f"{b['cloud_reads']} in {b['cloud_read_requests']} requests ({b['cloud_read_rounds']})"
        rest = b["exchange_s"] - (b["cloud_s"] or 0) - b["link_s"]
        other = r["find_seconds"] - b["scan_s"] - b["exchange_s"]
        lines.append(
            f"| {name} | {b['scan_s']:.3f} | {b['files_read']} | {b['exchange_s']:.3f} | {cloud} | {reads} | "
            f"{b['bytes_up']:,} / {b['bytes_down']:,} | {b['link_s']:.3f} | {rest:.3f} | {other:.3f} |"
        )
    scan = size["unchanged_scan"]
    lines += [
        "",
        f"The client's scan with nothing changed: {scan['seconds']:.3f} s for {size['files']:,} files, "
        f"{scan['files_read']} read, {scan.get('folders_listed', '-')} folders listed (a stat each; "
        "hashes and listings from the scan journal).",
    ]
    if size.get("renamed"):
        lines += _renamed_markdown(size["renamed"])
    work = size.get("client_work")
    if work:
        lines.append(
            f"The client's whole part of a sync of the unchanged tree (journal, scan, Merkle tree, "
            f"request encoded; in-process, median of 5): {work['wall_s'] * 1000:.0f} ms wall, "
            f"{work['cpu_s'] * 1000:.0f} ms CPU (scan alone {work['scan_wall_s'] * 1000:.0f} ms), "
            f"{work['files_read']} files read, {work['folders_listed']} folders listed."
        )
    return lines


def _renamed_markdown(renamed: dict) -> list[str]:
    base = renamed["rows"]["hycloud sync"]["find_seconds"]
    lines = [
        "",
        f"After renaming a folder ({renamed['folder']}, {renamed['files']:,} files; nothing else changed):",
        "",
        *result_files.table(
            ["method", "find changes (s)", "runs", "found", "bytes on link", "requests", "× HyCloud"],
            "lrllrrr",
            (
                [
                    name,
                    f"{r['find_seconds']:.2f}",
                    ", ".join(map(str, r["find_runs"])),
                    r["found"],
                    f"{r['find_bytes']:,}",
                    r["find_requests"],
                    f"{r['find_seconds'] / base:.1f}×",
                ]
                for name, r in renamed["rows"].items()
            ),
        ),
    ]
    return lines


def exchange_bytes(files: int, fraction: float) -> dict:
    """The bytes of both exchanges for the bench's tree, run in-process against the cloud's own
    answering code (no cloud, no link): what each sends, whatever the machine's load."""
    rng = random.Random(12)
    rels = [f"d{i % 10}/s{(i // 10) % 10}/f{i:05d}.txt" for i in range(files)]
    cloud = {f"{REMOTE}/{r}": FileEntry(rng.randbytes(32), 1.0) for r in rels}
    changed = rng.sample(rels, max(1, int(files * fraction)))
    local = {**cloud, **{f"{REMOTE}/{r}": FileEntry(rng.randbytes(32), 2.0) for r in changed}}
    mine, theirs = build_tree(local), build_tree(cloud)
    reader = sketch.NodeReader(theirs)
    request = sketch.SketchExchange(mine, REMOTE).request()
    reply = sketch.answer(request, reader)
    levels, up, down = LevelExchange(mine, REMOTE), 0, 0
    while not levels.done:
        asked = levels.request()
        answer = Responder(theirs).answer(asked)
        up, down = up + len(json.dumps({"paths": asked})), down + len(json.dumps(answer))
        levels.receive(answer)
    path_bytes = sum(len(r) + 1 for r in changed)
    return {
        "files": files,
        "changed": len(changed),
        "one_round": {
            "requests": 1,
            "up": len(request),
            "down": len(reply),
            "folders_read": len(reader.reads),
        },
        "level_json": {"requests": levels.rounds, "up": up, "down": down},
        "path_bytes": path_bytes,
    }


def _bytes_markdown(rows: list[dict], args) -> list[str]:
    lines = [
        "",
        "## Bytes of each exchange, in-process (the cloud's answering code, no cloud, no link)",
        "",
        "| files | changed | one-round: requests | up / down (bytes) | link share (s) | level-by-level JSON: requests "
        "| up / down (bytes) | link share (s) | lower bound (s) |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        one, lv = r["one_round"], r["level_json"]
        link = [
            args.rtt / 1000 * x["requests"]
            + x["up"] * 8 / (args.up * 1e6)
            + x["down"] * 8 / (args.down * 1e6)
            for x in (one, lv)
        ]
        bound = args.rtt / 1000 + r["path_bytes"] * 8 / (min(args.up, args.down) * 1e6)
        lines.append(
            f"| {r['files']:,} | {r['changed']:,} | {one['requests']} | {one['up']:,} / {one['down']:,} | "
            f"{link[0]:.3f} | {lv['requests']} | {lv['up']:,} / {lv['down']:,} | {link[1]:.3f} | {bound:.3f} |"
        )
    return lines


def _joined(paths: list[str]) -> dict:
    """One report of several runs (e.g. each size run on its own, the larger taking an hour to seed)."""
    docs = [json.loads(Path(p).read_text()) for p in paths]
    commands = "`; `.venv/bin/python ".join(d["command"] for d in docs)
    return {**docs[0], "command": commands, "sizes": [s for d in docs for s in d["sizes"]]}


def _before(paths: list[str]) -> dict[str, dict]:
    """Figures of an earlier run (the format before this one: one size per file), by size."""
    out = {}
    for p in paths:
        doc = json.loads(Path(p).read_text())
        commit = doc.get("commit", Path(p).stem)
        out[str(doc["files"])] = {"commit": commit, "row": doc["rows"]["hycloud sync"], "doc": doc}
    return out


def make_source_tree(root: Path, files: int, rng: random.Random) -> int:
    """A source tree's shape: `files` files in folders 1-4 deep, a few dozen per folder, sizes
    log-uniform from 100 B to 64 KiB and one in a hundred of 256 KiB-2 MiB; returns the bytes."""
    total, folders = 0, [""]
    for i in range(files):
        if i % 20 == 0:
            parent = rng.choice(folders)
            folders.append(f"{parent}p{len(folders)}/" if parent.count("/") < 4 else parent)
        size = int(10 ** rng.uniform(2, 4.8)) if rng.random() > 0.01 else rng.randint(256 << 10, 2 << 20)
        path = root / f"{folders[-1 - rng.randrange(min(4, len(folders)))]}f{i:05d}.c"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(rng.randbytes(size))
        total += size
    return total


def down_bench(args) -> dict:
    """A first `sync` down of a tree the client has never had, beside `get -r` of the same tree,
    over the same link, alternating, each into a new folder (sync with its own new state)."""
    from hycloud.sdk.trees import download_tree

    outputs, env = local.running_deployment()
    port = int(env["AWS_ENDPOINT_URL"].rsplit(":", 1)[1])
    work = Path(args.workdir or tempfile.mkdtemp()) / f"down{args.down_tree}"
    kept, source = work / "seeded.json", work / "source"
    seed = json.loads(kept.read_text()) if kept.exists() else {}
    if seed.get("url") != outputs["LocalApiUrl"]:
        shutil.rmtree(work, ignore_errors=True)
        account = create_account(outputs["TableName"], f"syncd-{uuid.uuid4().hex[:8]}")
        seed = {"url": outputs["LocalApiUrl"], "key": account["api_key"]}
        seed["bytes"] = make_source_tree(source, args.down_tree, random.Random(7))
        from hycloud.sdk.trees import upload_tree

        upload_tree(HyCloud(seed["url"], seed["key"]), source, REMOTE)
        kept.write_text(json.dumps(seed))
    truth = {p.relative_to(source).as_posix(): p.read_bytes() for p in source.rglob("*") if p.is_file()}
    runs: dict[str, list[dict]] = {"get -r": [], "hycloud sync (first, down)": []}
    with client_link(port, args) as link, through(link):
        for attempt in range(args.repeats):
            for name in runs:
                target = work / f"run{attempt}-{len(runs[name])}-{name.split()[0]}{name.split()[-1]}"
                shutil.rmtree(target, ignore_errors=True)
                os.environ["HYCLOUD_STATE"] = str(target) + ".state.sqlite3"
                client = HyCloud(seed["url"], seed["key"])
                client.small_file_threshold  # noqa: B018 - the deployment's info, fetched before timing
                if name == "get -r":
                    got = measure(link, lambda c=client, t=target: download_tree(c, REMOTE, t))
                else:
                    got = measure(link, lambda c=client, t=target: sync(c, t, REMOTE, "pull"))
                    assert not got["result"]["failed"], got["result"]["failed"][:3]
                    got["timings"] = got["result"]["timings"]
                made = {p.relative_to(target).as_posix(): p for p in target.rglob("*") if p.is_file()}
                assert sorted(made) == sorted(truth) and all(
                    made[r].read_bytes() == data for r, data in truth.items()
                ), f"{name}: the tree differs"
                runs[name].append({k: v for k, v in got.items() if k != "result"})
                print(f"{name}: {got['seconds']:.2f} s", flush=True)
    rows = {name: _median(rs) | {"runs": [round(r["seconds"], 2) for r in rs]} for name, rs in runs.items()}
    bound = args.rtt / 1000 + seed["bytes"] * 8 / (args.down * 1e6)
    return {
        "link": describe(args),
        "command": " ".join(["bench/sync_bench.py", *sys.argv[1:]]),
        "files": len(truth),
        "bytes": seed["bytes"],
        "lower_bound_s": round(bound, 3),
        "load_average_1min": round(os.getloadavg()[0], 2),
        "rows": rows,
    }


def watch_latency(args) -> dict:
    """`sync --watch` over the link: seconds from a file written locally to the cloud holding
    it (polled directly, off the link, every 10 ms), for --repeats files one after another."""
    import threading

    from hycloud.sync.watch import watch

    outputs, env = local.running_deployment()
    port = int(env["AWS_ENDPOINT_URL"].rsplit(":", 1)[1])
    account = create_account(outputs["TableName"], f"syncw-{uuid.uuid4().hex[:8]}")
    work = Path(tempfile.mkdtemp())
    os.environ["HYCLOUD_STATE"] = str(work / "state.sqlite3")
    folder, direct = work / "w", HyCloud(outputs["LocalApiUrl"], account["api_key"])
    folder.mkdir()
    direct.mkdir("/watched", parents=True)
    latencies: list[float] = []
    with client_link(port, args) as link, through(link):
        wan = HyCloud(outputs["LocalApiUrl"], account["api_key"])
        wan.small_file_threshold  # noqa: B018 - the deployment's info, fetched before timing
        ready = threading.Event()
        seconds = 10.0 + 6.0 * args.repeats
        watcher = threading.Thread(
            target=watch,
            args=(wan, folder, "/watched", PathFilter.of(), seconds),
            kwargs={"ready": ready.set},
        )
        watcher.start()
        ready.wait(30)
        time.sleep(2.0)
        for i in range(args.repeats):
            data = os.urandom(2000)
            made = time.perf_counter()
            (folder / f"note{i}.txt").write_bytes(data)
            while time.perf_counter() - made < 20:
                try:
                    if direct.stat(f"/watched/note{i}.txt").get("size") == len(data):
                        break
                except Exception:  # noqa: BLE001 - not there yet
                    pass
                time.sleep(0.01)
            latencies.append(round(time.perf_counter() - made, 3))
            print(f"change {i}: in the cloud after {latencies[-1]:.3f} s", flush=True)
            time.sleep(1.0)
        watcher.join()
    shutil.rmtree(work, ignore_errors=True)
    return {
        "link": describe(args),
        "command": " ".join(["bench/sync_bench.py", *sys.argv[1:]]),
        "latencies_s": latencies,
        "median_s": sorted(latencies)[len(latencies) // 2],
        "load_average_1min": round(os.getloadavg()[0], 2),
    }


def watch_markdown(doc: dict) -> str:
    return "\n".join(
        [
            f"# Sync: `sync --watch`, a local change reaching the cloud ({doc['link']})",
            "",
            f"`.venv/bin/python {doc['command']}`: a 2,000-byte file written in the watched folder, then "
            "the cloud polled directly (off the link) every 10 ms until it holds it; one file after "
            f"another. Aim (issue 33): within 1 s at 100 ms RTT. 1-minute load average {doc['load_average_1min']:.1f}.",
            "",
            f"Median **{doc['median_s']:.3f} s**; each: {', '.join(f'{x:.3f}' for x in doc['latencies_s'])} s.",
            "",
        ]
    )


def down_markdown(doc: dict) -> str:
    get_r = doc["rows"]["get -r"]["seconds"]
    lines = [
        f"# Sync: a first `sync` down of a new tree beside `get -r` of it ({doc['link']})",
        "",
        f"`.venv/bin/python {doc['command']}`: {doc['files']:,} files, {doc['bytes']:,} bytes, each "
        "method into a new folder (sync with a new state store), alternating; median of the runs. "
        "Aim (issue 33): sync within 1.2× of get -r. Lower bound: one round trip plus the bytes at "
        f"the link's rate = {doc['lower_bound_s']:.2f} s. 1-minute load average "
        f"{doc['load_average_1min']:.1f}.",
        "",
        *result_files.table(
            [
                "method",
                "seconds (median)",
                "runs",
                "× get -r",
                "× lower bound",
                "bytes on link",
                "scan / exchange / listing / transfer (s)",
            ],
            "lrlrrrl",
            (
                [
                    name,
                    f"{r['seconds']:.2f}",
                    ", ".join(map(str, r["runs"])),
                    f"{r['seconds'] / get_r:.2f}×",
                    f"{r['seconds'] / doc['lower_bound_s']:.1f}×",
                    f"{r['bytes']:,}",
                    _down_phases(r.get("timings")),
                ]
                for name, r in doc["rows"].items()
            ),
        ),
    ]
    return "\n".join(lines) + "\n"


def _down_phases(t: dict | None) -> str:
    """Seconds in each phase of a sync down, `-` for a method that does not report them."""
    if not t:
        return "-"
    return " / ".join(f"{t[k]:.2f}" for k in ("scan_s", "exchange_s", "list_s", "transfer_s"))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, nargs="*", default=[10_000])
    parser.add_argument("--changed", type=float, default=0.01, help="fraction of files edited")
    parser.add_argument("--repeats", type=int, default=3, help="runs of each search (list + head: one)")
    parser.add_argument("--head", type=int, default=1, help="1: also time list + head per object")
    parser.add_argument("--name", default="sync", help="bench/results/<name>.{json,md}")
    parser.add_argument("--workdir", help="keep the trees, state and accounts here for later runs")
    parser.add_argument("--before", action="append", default=[], help="an earlier run's .json, shown beside")
    parser.add_argument("--join", nargs="+", help="runs' .json (one size each) made into one report, not run")
    parser.add_argument(
        "--bytes", type=int, nargs="*", default=[], help="sizes whose exchange bytes are counted"
    )
    parser.add_argument("--note", action="append", default=[], help="a line for the report")
    parser.add_argument("--watch-latency", action="store_true", help="only: sync --watch, change to cloud")
    parser.add_argument("--rename", type=int, default=1, help="1: also find a renamed folder (d3)")
    parser.add_argument(
        "--client-only", type=int, nargs="*", default=[], help="sizes: the client's part alone"
    )
    parser.add_argument(
        "--down-tree", type=int, help="only: a first sync down of a new tree of N files vs get -r"
    )
    add_link_args(parser)
    args = parser.parse_args()
    if args.watch_latency:
        watched = watch_latency(args)
        result_files.write(args.name, watched, watch_markdown(watched))
        print(watch_markdown(watched))
        return
    if args.down_tree:
        down = down_bench(args)
        result_files.write(args.name, down, down_markdown(down))
        print(down_markdown(down))
        return
    doc = (
        _joined(args.join)
        if args.join
        else run(args)
        if args.files
        else {"sizes": [], "link": describe(args)}
    )
    doc["client_only"] = [client_only(n, args.workdir) for n in args.client_only]
    doc.setdefault("command", " ".join(["bench/sync_bench.py", *sys.argv[1:]]))
    doc.setdefault("repeats", args.repeats)
    doc["before"] = _before(args.before)
    doc["notes"] = args.note
    doc["link_args"] = {"rtt": args.rtt, "up": args.up, "down": args.down}
    doc["exchange_bytes"] = [exchange_bytes(n, args.changed) for n in args.bytes]
    result_files.write(args.name, doc, markdown(doc))
    print(markdown(doc))


if __name__ == "__main__":
    main()
