"""Filesystem benchmark on the local deployment: HyCloud transfers next to plain boto3 S3 calls.

For each file size, the time to upload and download through HyCloud (small files through the API to
EFS, large ones straight to S3 with presigned parts) beside a plain boto3 put_object/get_object of
the same bytes to the same LocalStack S3; then the latency of LIST, STAT, MOVE and COPY.

    .venv/bin/python bench/fs_bench.py [--repeat 5]
    .venv/bin/python bench/fs_bench.py --trees [--tree "1,000 files" ...] [--name fs_trees]

Starts the local cloud and deploys if needed; writes bench/results/fs.json and fs.md. With
--trees it times `mv` and `rm -r` of whole trees instead (bench/tree_ops.py) and writes
bench/results/<name>.json and .md.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

import boto3

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "layers" / "core"), str(ROOT / "client")]
import result_files  # noqa: E402
import tree_ops  # noqa: E402

from hycloud.admin import create_user  # noqa: E402
from hycloud.sdk import HyCloud  # noqa: E402
from infra.local import deploy as local  # noqa: E402

SIZES = {
    "1 KiB": 1 << 10,
    "100 KiB": 100 << 10,
    "1 MiB": 1 << 20,
    "2 MiB": 2 << 20,
    "8 MiB": 8 << 20,
    "32 MiB": 32 << 20,
}


def timed(fn, repeat: int) -> float:
    """Median wall time in milliseconds."""
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


def transfer_row(hc: HyCloud, s3, bucket: str, work: Path, label: str, size: int, repeat: int) -> dict:
    src = work / f"f{size}"
    src.write_bytes(os.urandom(size))
    data = src.read_bytes()
    remote = f"/bench/{label.replace(' ', '')}"
    hc.mkdir("/bench", parents=True)
    return {
        "size": label,
        "hycloud_upload_ms": timed(lambda: hc.put(src, remote), repeat),
        "hycloud_download_ms": timed(lambda: hc.get(remote, work / "out"), repeat),
        "boto3_put_ms": timed(lambda: s3.put_object(Bucket=bucket, Key=remote, Body=data), repeat),
        "boto3_get_ms": timed(lambda: s3.get_object(Bucket=bucket, Key=remote)["Body"].read(), repeat),
        "path": hc.stat(remote).get("storage"),
    }


def metadata_rows(hc: HyCloud, repeat: int) -> dict[str, float]:
    hc.mkdir("/meta", parents=True)
    for i in range(50):
        hc.put_bytes(f"/meta/f{i}", b"x" * 100)
    names = iter(range(10_000))

    def move():
        n = next(names)
        hc.mv("/meta/f0", f"/meta/m{n}")
        hc.mv(f"/meta/m{n}", "/meta/f0")

    return {
        "LIST (50 entries)": timed(lambda: hc.ls("/meta"), repeat),
        "STAT": timed(lambda: hc.stat("/meta/f1"), repeat),
        "MOVE": timed(move, repeat) / 2,
        "COPY (small file)": timed(lambda: hc.cp("/meta/f1", f"/meta/c{uuid.uuid4().hex[:6]}"), repeat),
        "COPY (32 MiB large file)": timed(
            lambda: hc.cp("/bench/32MiB", f"/meta/l{uuid.uuid4().hex[:6]}"), repeat
        ),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--trees", action="store_true", help="time mv and rm -r of whole trees")
    parser.add_argument("--tree", action="append", default=[], help="only this tree (repeatable)")
    parser.add_argument("--name", default="fs_trees", help="results name for --trees")
    args = parser.parse_args()
    outputs, env = local.running_deployment()
    key = create_user(outputs["TableName"], f"bench-{uuid.uuid4().hex[:8]}")
    hc = HyCloud(outputs["LocalApiUrl"], key)
    s3 = boto3.client("s3", endpoint_url=env["AWS_ENDPOINT_URL"])
    bucket = f"bench-plain-{uuid.uuid4().hex[:8]}"
    s3.create_bucket(Bucket=bucket)
    if args.trees:
        with tempfile.TemporaryDirectory() as tmp:
            rows = tree_ops.tree_rows(hc, s3, bucket, Path(tmp), args.repeat, args.tree)
        table = tree_ops.tree_table(rows)
        result_files.write(args.name, {"trees": rows}, table)
        print(table)
        return
    with tempfile.TemporaryDirectory() as tmp:
        transfers = []
        for label, size in SIZES.items():
            transfers.append(transfer_row(hc, s3, bucket, Path(tmp), label, size, args.repeat))
            print(transfers[-1], flush=True)
    meta = metadata_rows(hc, args.repeat * 4)
    lines = [
        "| size | path | HyCloud upload ms | boto3 put ms | HyCloud download ms | boto3 get ms |",
        "| --- | --- | ---: | ---: | ---: | ---: |",
    ]
    lines += [
        f"| {r['size']} | {r['path']} | {r['hycloud_upload_ms']:.0f} | {r['boto3_put_ms']:.0f} | "
        f"{r['hycloud_download_ms']:.0f} | {r['boto3_get_ms']:.0f} |"
        for r in transfers
    ]
    lines += ["", "| operation | median ms |", "| --- | ---: |"] + [
        f"| {k} | {v:.0f} |" for k, v in meta.items()
    ]
    result_files.write("fs", {"transfers": transfers, "metadata_ms": meta}, "\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
