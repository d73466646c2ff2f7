"""Small-file bundles over an emulated client link (50 Mbit/s, RTT 100 ms; seed 000 §III-B).

Two trees: 100 files of 10 KiB (random bytes), and 1,000 files of a real source tree (the first
1,000 files of a Django release, mixed sizes, as `bench/delta_bench.py` fetches it). For each, the
time and the bytes on the client link of:
  put -r with bundles (the default) and one request per file (`bundled=False`, the old path),
  plain boto3 uploading the same files to a bucket of the same LocalStack with 10 threads;
  get -r with bundles and one request per file, and boto3 downloading them with 10 threads.
Each upload goes to a new folder (nothing is already there). Medians of the runs.

    .venv/bin/python bench/bundle_bench.py [--repeats 3] [--source-repeats 1] [--files 1000] [--rtt 100]

Needs the local deployment (started and deployed if absent); writes bench/results/bundles.{json,md}.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tarfile
import tempfile
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "layers" / "core"), str(ROOT / "client")]
import result_files  # noqa: E402

from bench.delta_bench import django_versions, fetch_django  # noqa: E402
from bench.links import add_link_args, client_link, describe, through  # noqa: E402
from bench.links import measure as measure_with_result  # noqa: E402
from hycloud.admin import create_user  # noqa: E402
from hycloud.sdk import HyCloud, trees  # noqa: E402
from infra.local import deploy as local  # noqa: E402

KiB = 1024
THREADS = 10  # boto3's side: what `aws s3 cp --recursive` runs by default
MODES = ["bundled", "per_file", "boto3_10_threads"]


def small_tree(folder: Path, n: int = 100, size: int = 10 * KiB) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        (folder / f"f{i:03d}.bin").write_bytes(os.urandom(size))
    return folder


def source_tree(folder: Path, n: int) -> Path:
    """The first `n` regular files (by path) of a Django release's sources."""
    tar = fetch_django(django_versions(1)[-1])
    with tarfile.open(tar) as archive:
        members = sorted((m for m in archive.getmembers() if m.isfile()), key=lambda m: m.name)[:n]
        archive.extractall(folder, members=members, filter="data")
    return folder


def measure(link, fn) -> dict:
    """Time and link bytes of one run (what it returned is not kept)."""
    return {k: v for k, v in measure_with_result(link, fn).items() if k != "result"}


def files_of(root: Path) -> list[tuple[Path, str]]:
    return [(p, p.relative_to(root).as_posix()) for p in sorted(root.rglob("*")) if p.is_file()]


def boto3_client(link):
    import boto3
    from botocore.config import Config

    return boto3.client(
        "s3",
        endpoint_url=link.url,
        region_name="us-east-1",
        config=Config(max_pool_connections=THREADS, retries={"max_attempts": 3}),
    )


def boto3_put(s3, bucket: str, prefix: str, files: list[tuple[Path, str]]) -> None:
    with ThreadPoolExecutor(THREADS) as pool:
        list(pool.map(lambda f: s3.upload_file(str(f[0]), bucket, f"{prefix}/{f[1]}"), files))


def boto3_get(s3, bucket: str, prefix: str, files: list[tuple[Path, str]], out: Path) -> None:
    def get(rel: str) -> None:
        target = out / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        s3.download_file(bucket, f"{prefix}/{rel}", str(target))

    with ThreadPoolExecutor(THREADS) as pool:
        list(pool.map(lambda f: get(f[1]), files))


def check_same(src: Path, dst: Path) -> None:
    for path, rel in files_of(src):
        assert (dst / rel).read_bytes() == path.read_bytes(), f"{rel} differs"


def run_tree(name: str, src: Path, link, url: str, key: str, bucket: str, work: Path, repeats: int) -> dict:
    files = files_of(src)
    runs: dict[str, list[dict]] = {f"{d}_{m}": [] for d in ("up", "down") for m in MODES}
    with through(link):
        client, s3 = HyCloud(url, key), boto3_client(link)
        client.info()  # the threshold is known before timing, as after `configure`
        for rep in range(repeats):
            tag = f"{name}-{rep}-{uuid.uuid4().hex[:6]}"
            for mode, bundled in (("bundled", True), ("per_file", False)):
                remote = f"/bench/{tag}-{mode}"
                runs[f"up_{mode}"].append(
                    measure(link, lambda r=remote, b=bundled: trees.upload_tree(client, src, r, bundled=b))
                )
                out = work / f"{tag}-{mode}"
                runs[f"down_{mode}"].append(
                    measure(
                        link, lambda r=remote, o=out, b=bundled: trees.download_tree(client, r, o, bundled=b)
                    )
                )
                check_same(src, out)
                shutil.rmtree(out)
            runs["up_boto3_10_threads"].append(measure(link, lambda t=tag: boto3_put(s3, bucket, t, files)))
            out = work / f"{tag}-boto3"
            runs["down_boto3_10_threads"].append(
                measure(link, lambda t=tag, o=out: boto3_get(s3, bucket, t, files, o))
            )
            check_same(src, out)
            shutil.rmtree(out)
            print(name, rep, {k: round(v[-1]["seconds"], 2) for k, v in runs.items()}, flush=True)
    row = {
        "repeats": repeats,
        "files": len(files),
        "bytes": sum(p.stat().st_size for p, _ in files),
        "runs": runs,
        **{k: statistics.median(r["seconds"] for r in v) for k, v in runs.items()},
        **{f"{k}_link_bytes": statistics.median(r["bytes"] for r in v) for k, v in runs.items()},
    }
    for way in ("up", "down"):
        row[f"{way}_bundled_less_time_than_per_file_pct"] = 100 * (
            1 - row[f"{way}_bundled"] / row[f"{way}_per_file"]
        )
        row[f"{way}_bundled_vs_boto3_speedup"] = row[f"{way}_boto3_10_threads"] / row[f"{way}_bundled"]
    return row


def markdown(doc: dict) -> str:
    lines = [
        f"Client link: {doc['link']}; medians of the runs. Seconds (MB on the link).",
        "",
        "| tree | files | MB | way | bundles | one request per file | boto3, 10 threads | "
        "bundles: less time than per file | bundles vs boto3 |",
        "| --- | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for name, r in doc["trees"].items():
        for way in ("up", "down"):
            cells = " | ".join(
                f"{r[f'{way}_{m}']:.2f} ({r[f'{way}_{m}_link_bytes'] / 1e6:.1f})" for m in MODES
            )
            lines.append(
                f"| {name} | {r['files']} | {r['bytes'] / 1e6:.1f} | {way} | {cells} | "
                f"{r[f'{way}_bundled_less_time_than_per_file_pct']:.1f}% | "
                f"{r[f'{way}_bundled_vs_boto3_speedup']:.2f}x |"
            )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--files", type=int, default=1000, help="files of the source tree (0: skip it)")
    parser.add_argument(
        "--source-repeats", type=int, default=1, help="runs of the source tree (per file takes minutes)"
    )
    add_link_args(parser)
    args = parser.parse_args()
    state = tempfile.TemporaryDirectory()
    os.environ["HYCLOUD_STATE"] = str(Path(state.name) / "state.sqlite3")
    local.start()
    outputs = local.deploy(log=lambda m: None)
    env = local.cloud_env()
    os.environ.update(env)
    key = create_user(outputs["TableName"], f"bundles-{uuid.uuid4().hex[:8]}")
    url, port = outputs["LocalApiUrl"], int(env["AWS_ENDPOINT_URL"].rsplit(":", 1)[1])
    import boto3

    bucket = f"bundle-bench-{uuid.uuid4().hex[:8]}"
    boto3.client("s3", endpoint_url=env["AWS_ENDPOINT_URL"], region_name="us-east-1").create_bucket(
        Bucket=bucket
    )
    doc = {
        "link": describe(args),
        "repeats": {"small": args.repeats, "source": args.source_repeats},
        "trees": {},
    }
    with client_link(port, args) as link, tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        trees_to_run = [("100 x 10 KiB", lambda: small_tree(work / "small"), args.repeats)]
        if args.files:
            source = f"django ({args.files} files)"
            trees_to_run.append(
                (source, lambda: source_tree(work / "django", args.files), args.source_repeats)
            )
        for name, make, repeats in trees_to_run:
            doc["trees"][name] = run_tree(name, make(), link, url, key, bucket, work, repeats)
            result_files.write("bundles", doc, markdown(doc))  # what is done is kept if a later run fails
    print(markdown(doc))


if __name__ == "__main__":
    started = time.perf_counter()
    main()
    print(f"took {time.perf_counter() - started:.0f} s")
