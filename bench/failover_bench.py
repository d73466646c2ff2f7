"""Standby replication and client failover against the local deployment (docs/FAILOVER.md).

    .venv/bin/python bench/failover_bench.py [--files 60] [--stale 20] [--changes 20]

0. Record stream lag: `--changes` keys added and revoked one at a time; seconds from the write on
   the primary's table until the standby's table has it (and no longer has it), against the peer,
   the scan-based backfill pass over the same user's records (what every pass did before the
   stream, and a change waited for up to the schedule's minute on top of it).
1. Replication passes over one new user (`{"users": [id]}`): the first copies `--files` small files (a full copy),
   the next finds nothing changed (one Merkle round), the last follows one changed file: the
   Merkle-driven pass against the full copy, in the same run.
2. Failover with `--stale` writes the standby lacks (replication paused): time to switch when the
   primary refuses connections, replaying eight at a time against one at a time (the peer).

Writes bench/results/failover.json and failover.md.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "layers" / "core"), str(ROOT / "client")]
import boto3  # noqa: E402
import result_files  # noqa: E402

from hycloud import failover  # noqa: E402
from hycloud.admin import add_key, create_account, users  # noqa: E402
from hycloud.sdk import HyCloud  # noqa: E402
from infra.local import deploy as local  # noqa: E402


def replicate(outputs: dict, **event) -> tuple[float, dict]:
    started = time.monotonic()
    answer = boto3.client("lambda").invoke(
        FunctionName=outputs["ReplicatorFunctionName"], Payload=json.dumps(event)
    )
    result = json.loads(answer["Payload"].read())
    if "FunctionError" in answer:
        raise RuntimeError(result)
    return time.monotonic() - started, result


def dead_url(url: str) -> str:
    """The same API path on a loopback port nothing listens on (connections refused)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    path = url.split("/", 3)[3]
    return f"http://127.0.0.1:{port}/{path}"


def _until(table, key: dict, present: bool, bound_s: float = 60.0) -> float:
    started = time.monotonic()
    while ("Item" in table.get_item(Key=key, ConsistentRead=True)) != present:
        if time.monotonic() - started > bound_s:
            raise TimeoutError(f"{key} not {'there' if present else 'gone'} after {bound_s}s")
        time.sleep(0.02)
    return time.monotonic() - started


def _stats(values: list[float]) -> dict:
    ordered = sorted(values)
    return {"median": ordered[len(ordered) // 2], "max": ordered[-1], "n": len(ordered)}


def stream_lag(outputs: dict, name: str, uid: str, changes: int) -> dict:
    standby = boto3.resource("dynamodb", region_name=local.STANDBY_REGION).Table(outputs["StandbyTableName"])
    put, gone = [], []
    for _ in range(changes):
        key_id = add_key(outputs["TableName"], name).split("_")[1]
        put.append(_until(standby, {"pk": f"KEY#{key_id}", "sk": "KEY"}, True))
        users(outputs["TableName"]).revoke(key_id)
        gone.append(_until(standby, {"pk": f"KEY#{key_id}", "sk": "KEY"}, False))
    scan, result = replicate(outputs, users=[uid], backfill=True)
    return {
        "put": _stats(put),
        "delete": _stats(gone),
        "backfill_scan_s": scan,
        "backfill_records": result["records"],
        "load": os.getloadavg()[0],
    }


def passes(outputs: dict, key: str, uid: str, files: int) -> dict:
    client = HyCloud(outputs["LocalApiUrl"], key)
    for i in range(files):
        client.put_bytes(f"/tree/d{i % 6}/f{i}.bin", os.urandom(4096), parents=True)
    replicate(outputs, action="resume")
    full, first = replicate(outputs, users=[uid])  # this user only: the cloud may hold others
    same, second = replicate(outputs, users=[uid])
    client.put_bytes("/tree/d0/f0.bin", os.urandom(4096))
    one, third = replicate(outputs, users=[uid])
    return {
        "full_copy": {"seconds": full, "ops": first["copied"]},
        "no_change": {"seconds": same, "ops": second["copied"]},
        "one_change": {"seconds": one, "ops": third["copied"]},
    }


def switch(outputs: dict, key: str, stale: int, threads: int) -> dict:
    failover.REPLAY_THREADS = threads
    client = HyCloud(outputs["LocalApiUrl"], key, standby=outputs["StandbyLocalApiUrl"])
    replicate(outputs, action="pause")
    tag = uuid.uuid4().hex[:6]
    for i in range(stale):
        client.put_bytes(f"/stale-{tag}/f{i}.bin", os.urandom(2048), parents=True)
    client.http.primary.base = dead_url(client.http.primary.base)
    started = time.monotonic()
    client.stat(f"/stale-{tag}/f0.bin")
    took = time.monotonic() - started
    (event,) = client.http.switches
    replicate(outputs, action="resume")
    return {"threads": threads, "seconds": took, "replayed": event["replayed"]}


def markdown(doc: dict) -> str:
    p, lag = doc["passes"], doc["stream"]
    lines = [
        "# Standby replication and failover (local cloud)",
        "",
        f"{doc['files']} small files; {doc['stale']} writes the standby lacks at failover. "
        f"Machine load average at start: {doc['load']:.1f} (2 cores).",
        "",
        f"| record change reaches the standby (n={lag['put']['n']}, load {lag['load']:.1f}) | median s | max s |",
        "|---|---:|---:|",
        f"| stream: key added | {lag['put']['median']:.2f} | {lag['put']['max']:.2f} |",
        f"| stream: key revoked (deleted) | {lag['delete']['median']:.2f} | {lag['delete']['max']:.2f} |",
        f"| scan backfill pass over one user ({lag['backfill_records']} records written) | "
        f"{lag['backfill_scan_s']:.2f} | + up to 60 s of schedule |",
        "",
        "| replication pass | seconds | ops sent |",
        "|---|---:|---:|",
    ]
    for name in ("full_copy", "no_change", "one_change"):
        lines.append(f"| {name.replace('_', ' ')} | {p[name]['seconds']:.2f} | {p[name]['ops']} |")
    lines += [
        "",
        f"Merkle-driven pass after one change: {p['full_copy']['seconds'] / p['one_change']['seconds']:.1f}× "
        "faster than the full copy.",
        "",
        "| failover replay | seconds to switch | writes replayed |",
        "|---|---:|---:|",
    ]
    for row in doc["switch"]:
        lines.append(f"| {row['threads']} at a time | {row['seconds']:.2f} | {row['replayed']} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=60)
    parser.add_argument("--stale", type=int, default=20)
    parser.add_argument("--changes", type=int, default=20)
    args = parser.parse_args()
    os.environ.update(local.cloud_env())
    outputs = next(iter(json.loads(local.OUTPUTS.read_text()).values()))
    account = create_account(outputs["TableName"], f"bench-failover-{uuid.uuid4().hex[:8]}")
    key = account["api_key"]
    doc = {"files": args.files, "stale": args.stale, "load": os.getloadavg()[0]}
    doc["stream"] = stream_lag(outputs, account["user"], account["id"], args.changes)
    doc["passes"] = passes(outputs, key, account["id"], args.files)
    doc["switch"] = [switch(outputs, key, args.stale, threads) for threads in (8, 1)]
    result_files.write("failover", doc, markdown(doc))
    print(markdown(doc))


if __name__ == "__main__":
    main()
