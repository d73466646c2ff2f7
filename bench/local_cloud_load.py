"""What an API request costs the local cloud: a fixed load, and the CPU LocalStack spends on it.

LocalStack runs in one Python process, so under the test suite's load it is the local cloud's
bottleneck; this measures its CPU per API request (and the requests per second) for a fixed load
of small-file writes and reads from a few threads, beside the same number of plain boto3 S3
put/head/get calls to the same LocalStack (the floor: one LocalStack call each, no function).

    .venv/bin/python bench/local_cloud_load.py [--threads 4] [--rounds 60]

Starts the local cloud and deploys if needed; writes bench/results/local_cloud_load.{json,md}.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import boto3

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "layers" / "core"), str(ROOT / "client")]
import requests  # noqa: E402
import result_files  # noqa: E402

from hycloud.admin import create_user  # noqa: E402
from infra.local import deploy as local  # noqa: E402
from infra.local import localcloud  # noqa: E402


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measure(pid: int, threads: int, work: Callable[[int], int]) -> dict:
    """Run `work(n)` in `threads` threads; requests made, wall seconds, LocalStack CPU seconds."""
    counts: list[int] = []
    cpu0, t0 = cpu_seconds(pid), time.perf_counter()
    runners = [threading.Thread(target=lambda n=n: counts.append(work(n))) for n in range(threads)]
    for runner in runners:
        runner.start()
    for runner in runners:
        runner.join()
    seconds, cpu = time.perf_counter() - t0, cpu_seconds(pid) - cpu0
    done = sum(counts)
    return {
        "requests": done,
        "seconds": round(seconds, 1),
        "per_s": round(done / seconds, 1),
        "localstack_cpu_ms_per_request": round(cpu / done * 1000, 1),
    }


def api_work(base: str, key: str, rounds: int) -> Callable[[int], int]:
    def work(n: int) -> int:
        session = requests.Session()
        session.headers["Authorization"] = f"Bearer {key}"
        call = lambda method, route, **kw: session.request(method, base + route, timeout=60, **kw)  # noqa: E731
        call("POST", "/v1/dirs", json={"path": f"/load{n}/a/b", "parents": True}).raise_for_status()
        for i in range(rounds):
            path = {"path": f"/load{n}/a/b/f{i}"}
            call("PUT", "/v1/files", params=path, data=b"x" * 100).raise_for_status()
            call("GET", "/v1/stat", params=path).raise_for_status()
            call("GET", "/v1/files", params=path).raise_for_status()
        return 1 + 3 * rounds

    return work


def s3_work(s3, bucket: str, rounds: int) -> Callable[[int], int]:
    def work(n: int) -> int:
        for i in range(rounds):
            s3.put_object(Bucket=bucket, Key=f"{n}/f{i}", Body=b"x" * 100)
            s3.head_object(Bucket=bucket, Key=f"{n}/f{i}")
            s3.get_object(Bucket=bucket, Key=f"{n}/f{i}")["Body"].read()
        return 3 * rounds

    return work


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=60)
    args = parser.parse_args()
    outputs, env = local.running_deployment()
    pid = localcloud.running_pid()
    key = create_user(outputs["TableName"], f"load-{uuid.uuid4().hex[:8]}")
    s3 = boto3.client("s3", endpoint_url=env["AWS_ENDPOINT_URL"])
    bucket = f"load-plain-{uuid.uuid4().hex[:8]}"
    s3.create_bucket(Bucket=bucket)
    rows = {
        "HyCloud API (put, stat, get of a 100-byte file)": measure(
            pid, args.threads, api_work(outputs["LocalApiUrl"], key, args.rounds)
        ),
        "plain boto3 S3 (put, head, get of a 100-byte object)": measure(
            pid, args.threads, s3_work(s3, bucket, args.rounds)
        ),
    }
    lines = [
        f"{args.threads} threads x {args.rounds} rounds",
        "",
        "| load | requests | seconds | requests/s | LocalStack CPU ms per request |",
        "| --- | ---: | ---: | ---: | ---: |",
    ] + [
        f"| {name} | {r['requests']} | {r['seconds']} | {r['per_s']} | {r['localstack_cpu_ms_per_request']} |"
        for name, r in rows.items()
    ]
    result_files.write(
        "local_cloud_load",
        {"threads": args.threads, "rounds": args.rounds, "rows": rows},
        "\n".join(lines) + "\n",
    )
    print("\n".join(lines))


if __name__ == "__main__":
    main()
