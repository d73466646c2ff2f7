"""Small-file bundles over an emulated client link (50 Mbit/s, RTT 100 ms; seed 000 §III-B).

Two trees: 100 files of 10 KiB (random bytes), and 1,000 files of a real source tree (the first
1,000 files of a Django release, mixed sizes, as `bench/delta_bench.py` fetches it). For each, the
time and the bytes on the client link of:
  put -r with bundles (the default) and one request per file (the path before bundles: a PUT per
  file, one after another), plain boto3 uploading the same files to a bucket of the same
  LocalStack with 10 threads; get -r with bundles and one request per file, and boto3
  downloading them with 10 threads.
A request of the per-file baseline whose connection dropped (the emulated link on a loaded
machine loses one now and then) is sent again and counted, so one drop costs a retry instead of
the run. Each upload goes to a new folder (nothing is already there). Before timing, one untimed
bundled upload and download of the tree starts the Lambda environments parallel bundles use.
Medians of the runs, with the load average beside them (the machine is shared).

    .venv/bin/python bench/bundle_bench.py [--repeats 3] [--source-repeats 1] [--files 1000]
        [--source-ways up,down] [--rtt 100]

`--repeats 0` keeps the 100 x 10 KiB row of the last results and runs only the source tree.

Needs the local deployment (started and deployed if absent); writes bench/results/bundles.{json,md}.
"""

from __future__ import annotations

import argparse
import json
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
from hycloud.sdk.trees import restore_metadata  # noqa: E402
from hycloud_core.errors import HyCloudError  # noqa: E402
from infra.local import deploy as local  # noqa: E402

KiB = 1024
THREADS = 10  # boto3's side: what `aws s3 cp --recursive` runs by default
MODES = ["bundled", "per_file", "boto3_10_threads"]
DROPPED = ("outcome-unknown", "unreachable")  # the request's connection was lost
RETRIES = 3


class PerFile:
    """One request per file, as `put -r`/`get -r` sent them before bundles; a request whose
    connection dropped is sent again (a PUT of the same bytes to the same path, or a GET, may be
    repeated) and counted in `retries`."""

    def __init__(self, client: HyCloud) -> None:
        self.client, self.retries = client, 0

    def _again(self, fn):
        for attempt in range(RETRIES + 1):
            try:
                return fn()
            except HyCloudError as err:
                if err.code not in DROPPED or attempt == RETRIES:
                    raise
                self.retries += 1
        raise AssertionError("unreachable")

    def upload(self, src: Path, remote: str) -> None:
        self._again(lambda: self.client.mkdir(remote, parents=True))
        for item, rel, is_dir in trees.local_files(src):
            target = f"{remote}/{rel}"
            if is_dir:
                self._again(lambda t=target: self.client.mkdir(t, parents=True))
                continue
            st = item.stat()
            kept = {"mtime": st.st_mtime, "mode": st.st_mode & 0o777}
            self._again(lambda i=item, t=target, k=kept: self.client.put(i, t, parents=True, **k))

    def download(self, remote: str, out: Path) -> None:
        out.mkdir(parents=True, exist_ok=True)
        for entry in self._again(lambda: list(self.client.iter_dir(remote))):
            target = out / entry["name"]
            if entry["type"] == "dir":
                self.download(entry["path"], target)
            else:
                self._again(lambda e=entry, t=target: self.client.get(e["path"], t))
                restore_metadata(target, entry)


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
    """Time and link bytes of one run (what it returned is not kept), printed as it ends."""
    out = {k: v for k, v in measure_with_result(link, fn).items() if k != "result"}
    print(f"  {out['seconds']:.2f} s, load {os.getloadavg()[0]:.1f}", flush=True)
    return out


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


def warm_up(client: HyCloud, src: Path, out: Path) -> None:
    """One untimed bundled round trip first: the controller's Lambda environments that parallel
    bundles need are started (a cold start is seconds in the emulator), as in steady use."""
    remote = f"/bench/warm-{uuid.uuid4().hex[:6]}"
    trees.upload_tree(client, src, remote)
    trees.download_tree(client, remote, out)
    shutil.rmtree(out)


def run_tree(
    name: str, src: Path, link, url: str, key: str, bucket: str, work: Path, repeats: int, ways: list[str]
) -> dict:
    """`ways`: ["up", "down"], or ["up"] alone (then what was stored is checked by the hashes the
    uploads verify, not by downloading it)."""
    files = files_of(src)
    down = "down" in ways
    runs: dict[str, list[dict]] = {f"{d}_{m}": [] for d in ways for m in MODES}
    loads: list[float] = []
    with through(link):
        client, s3 = HyCloud(url, key), boto3_client(link)
        client.info()  # the threshold is known before timing, as after `configure`
        warm_up(client, src, work / f"{name}-warm")
        per_file = PerFile(client)
        for rep in range(repeats):
            tag = f"{name}-{rep}-{uuid.uuid4().hex[:6]}"
            loads.append(os.getloadavg()[0])
            remote, out = f"/bench/{tag}-bundled", work / f"{tag}-bundled"
            runs["up_bundled"].append(measure(link, lambda r=remote: trees.upload_tree(client, src, r)))
            if down:
                runs["down_bundled"].append(
                    measure(link, lambda r=remote, o=out: trees.download_tree(client, r, o))
                )
                check_same(src, out)
                shutil.rmtree(out)
            runs["up_boto3_10_threads"].append(measure(link, lambda t=tag: boto3_put(s3, bucket, t, files)))
            remote, out = f"/bench/{tag}-per-file", work / f"{tag}-per-file"
            runs["up_per_file"].append(measure(link, lambda r=remote: per_file.upload(src, r)))
            if down:
                runs["down_per_file"].append(measure(link, lambda r=remote, o=out: per_file.download(r, o)))
                check_same(src, out)
                shutil.rmtree(out)
            out = work / f"{tag}-boto3"
            if down:
                runs["down_boto3_10_threads"].append(
                    measure(link, lambda t=tag, o=out: boto3_get(s3, bucket, t, files, o))
                )
                check_same(src, out)
                shutil.rmtree(out)
            loads.append(os.getloadavg()[0])
            print(name, rep, {k: round(v[-1]["seconds"], 2) for k, v in runs.items()}, flush=True)
    row = {
        "command": " ".join([".venv/bin/python bench/bundle_bench.py", *sys.argv[1:]]),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "repeats": repeats,
        "load_average_1min": [round(x, 2) for x in loads],
        "per_file_retries": per_file.retries,
        "files": len(files),
        "bytes": sum(p.stat().st_size for p, _ in files),
        "runs": runs,
        **{k: statistics.median(r["seconds"] for r in v) for k, v in runs.items()},
        **{f"{k}_link_bytes": statistics.median(r["bytes"] for r in v) for k, v in runs.items()},
    }
    for way in ways:
        row[f"{way}_bundled_less_time_than_per_file_pct"] = 100 * (
            1 - row[f"{way}_bundled"] / row[f"{way}_per_file"]
        )
        row[f"{way}_bundled_vs_boto3_speedup"] = row[f"{way}_boto3_10_threads"] / row[f"{way}_bundled"]
    return row


def markdown(doc: dict) -> str:
    lines = [
        f"Client link: {doc['link']}; medians of the runs. Seconds (MB on the link).",
        "A 2-core machine shared with other work: 1-minute load average before and after each "
        "run in the last column, with the per-file requests sent again after a dropped connection.",
        "",
        "| tree | files | MB | way | bundles | one request per file | boto3, 10 threads | "
        "bundles: less time than per file | bundles vs boto3 | runs, load average, retries |",
        "| --- | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for name, r in doc["trees"].items():
        for way in (w for w in ("up", "down") if f"{w}_bundled" in r):
            cells = " | ".join(
                f"{r[f'{way}_{m}']:.2f} ({r[f'{way}_{m}_link_bytes'] / 1e6:.1f})" for m in MODES
            )
            lines.append(
                f"| {name} | {r['files']} | {r['bytes'] / 1e6:.1f} | {way} | {cells} | "
                f"{r[f'{way}_bundled_less_time_than_per_file_pct']:.1f}% | "
                f"{r[f'{way}_bundled_vs_boto3_speedup']:.2f}x | {r['repeats']}, "
                f"{min(r['load_average_1min']):.1f}-{max(r['load_average_1min']):.1f}, "
                f"{r['per_file_retries']} |"
            )
    lines += ["", "Rows from:"]
    lines += [
        f"- {name}: `{r.get('command', '')}`" + (f" ({r['date']})" if r.get("date") else "")
        for name, r in doc["trees"].items()
    ]
    return "\n".join(lines) + "\n"


SMALL = "100 x 10 KiB"


def deployed_outputs() -> dict:
    """The home instance's outputs of the last deploy (infra/local/deploy.py)."""
    data = json.loads(local.OUTPUTS.read_text())
    outputs = next(out for out in data.values() if "ApiUrl" in out)
    return {**outputs, "LocalApiUrl": local.local_api_url(outputs["ApiUrl"], local._cdk_env())}


def kept_rows(args: argparse.Namespace) -> dict:
    """With `--repeats 0` the 100 x 10 KiB row of the last results is kept as it was (each row
    names the command and date it came from)."""
    if args.repeats or not (result_files.RESULTS / "bundles.json").exists():
        return {}
    last = json.loads((result_files.RESULTS / "bundles.json").read_text())
    row = last["trees"].get(SMALL)
    return {SMALL: {"command": last.get("command", ""), **row}} if row else {}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--files", type=int, default=1000, help="files of the source tree (0: skip it)")
    parser.add_argument(
        "--source-repeats", type=int, default=1, help="runs of the source tree (per file takes minutes)"
    )
    parser.add_argument(
        "--deployed", action="store_true", help="the app is deployed as it is: skip deploying"
    )
    parser.add_argument(
        "--source-ways", default="up,down", help="up,down or up: the source tree's downloads too, or not"
    )
    add_link_args(parser)
    args = parser.parse_args()
    state = tempfile.TemporaryDirectory()
    os.environ["HYCLOUD_STATE"] = str(Path(state.name) / "state.sqlite3")
    local.start()
    outputs = local.deploy(log=lambda m: None) if not args.deployed else deployed_outputs()
    env = local.cloud_env()
    os.environ.update(env)
    key = create_user(outputs["TableName"], f"bundles-{uuid.uuid4().hex[:8]}")
    url, port = outputs["LocalApiUrl"], int(env["AWS_ENDPOINT_URL"].rsplit(":", 1)[1])
    import boto3

    bucket = f"bundle-bench-{uuid.uuid4().hex[:8]}"
    boto3.client("s3", endpoint_url=env["AWS_ENDPOINT_URL"], region_name="us-east-1").create_bucket(
        Bucket=bucket
    )
    doc = {"link": describe(args), "trees": kept_rows(args)}
    with client_link(port, args) as link, tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        trees_to_run = []
        if args.repeats:
            trees_to_run.append((SMALL, lambda: small_tree(work / "small"), args.repeats, ["up", "down"]))
        if args.files:
            source, ways = f"django ({args.files} files)", args.source_ways.split(",")
            make = lambda: source_tree(work / "django", args.files)  # noqa: E731
            trees_to_run.append((source, make, args.source_repeats, ways))
        for name, make, repeats, ways in trees_to_run:
            doc["trees"][name] = run_tree(name, make(), link, url, key, bucket, work, repeats, ways)
            result_files.write("bundles", doc, markdown(doc))  # what is done is kept if a later run fails
    print(markdown(doc))


if __name__ == "__main__":
    started = time.perf_counter()
    main()
    print(f"took {time.perf_counter() - started:.0f} s")
