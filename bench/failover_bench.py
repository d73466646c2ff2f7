"""Standby replication and client failover against the local deployment (docs/FAILOVER.md).

    .venv/bin/python bench/failover_bench.py [--files 60] [--stale 20]

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
from hycloud.admin import create_account  # noqa: E402
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
    p = doc["passes"]
    lines = [
        "# Standby replication and failover (local cloud)",
        "",
        f"{doc['files']} small files; {doc['stale']} writes the standby lacks at failover. "
        f"Machine load average at start: {doc['load']:.1f} (2 cores).",
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
    args = parser.parse_args()
    os.environ.update(local.cloud_env())
    outputs = next(iter(json.loads(local.OUTPUTS.read_text()).values()))
    account = create_account(outputs["TableName"], f"bench-failover-{uuid.uuid4().hex[:8]}")
    key = account["api_key"]
    doc = {"files": args.files, "stale": args.stale, "load": os.getloadavg()[0]}
    doc["passes"] = passes(outputs, key, account["id"], args.files)
    doc["switch"] = [switch(outputs, key, args.stale, threads) for threads in (8, 1)]
    result_files.write("failover", doc, markdown(doc))
    print(markdown(doc))


if __name__ == "__main__":
    main()
