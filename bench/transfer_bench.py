"""Transfers over an emulated client link (50 Mbit/s, RTT 100 ms) on real release histories.

For each consecutive pair of releases of the npm package `typescript` and of Django (uncompressed
source tars, fetched from the registries), the time and the bytes on the client link of:
  downloads (client holds the previous release): (a) direct from S3, (b) relay through EFS,
    (c) rsync-style delta, (d) version-aware delta;
  uploads (cloud holds the previous release): (e) direct to S3, (f) rsync-style delta against
    the checksum list the client kept when it uploaded the previous release (no old bytes needed),
    (g) version-aware delta (both deltas forced, with eq. 2's own verdict reported beside them).
The client remembers the previous release's content hash (as after transferring it), so a delta
download does not read its base twice. Each delta upload sends content the cloud does not hold yet
(the new release made unique for it), so its job stores the new version in S3 as it would on AWS.
Cloud-internal traffic (Lambda, S3, EFS, Step Functions) does not cross the link.

    .venv/bin/python bench/transfer_bench.py [--quick] [--series typescript,django] [--down 50 --up 50 --rtt 100]

Needs the local deployment (started and deployed if absent); writes bench/results/transfer.{json,md}.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "layers" / "core"), str(ROOT / "client")]
import result_files  # noqa: E402

from bench.cloud_jobs import CloudJobs  # noqa: E402
from bench.delta_bench import SERIES  # noqa: E402
from bench.links import through  # noqa: E402
from bench.relay_links import api_url, split_links  # noqa: E402
from bench.wan import SpawnedWanLink  # noqa: E402
from hycloud.admin import create_user  # noqa: E402
from hycloud.sdk import HyCloud  # noqa: E402
from hycloud.transfer import auto, background  # noqa: E402
from hycloud_core import content  # noqa: E402
from infra.local import deploy as local  # noqa: E402

MODES = [
    "a_direct",
    "b_relay",
    "c_rsync_delta",
    "d_version_delta",
    "e_direct_up",
    "f_rsync_delta_up",
    "g_version_delta_up",
]


def measure(link, fn) -> dict:
    link.reset_counters()
    t0 = time.perf_counter()
    fn()
    return {
        "seconds": time.perf_counter() - t0,
        "bytes": link.bytes_up + link.bytes_down,
        "up": link.bytes_up,
        "down": link.bytes_down,
    }


JOBS: dict = {}  # the cloud's delta jobs (CloudJobs), set in main


def settled(setup: HyCloud, local: Path, remote: str, **kwargs) -> None:
    """A set-up upload (off the measurement), then a wait until the cloud jobs it started have ended
    (a commit starts the delta from the version it superseded): on this one machine they would
    share its two cores with the transfer measured next, which on AWS they do not."""
    setup.put(local, remote, via="direct", **kwargs)
    JOBS["jobs"].settle()


def run_pair(setup: HyCloud, link, url: str, key: str, old: Path, new: Path, work: Path, tag: str) -> dict:
    """Both clients share one state store: what `setup` transferred (unmeasured, off the link), the
    measured client remembers, as it would had it transferred that version itself."""
    down_path, up_path = f"/bench/{tag}-down.tar", f"/bench/{tag}-up.tar"
    old_hash = content.hash_file(old)[0]
    settled(setup, old, down_path, parents=True)
    settled(setup, old, up_path, parents=True)
    row: dict = {"size": new.stat().st_size}
    with through(link):
        wan = HyCloud(url, key)
        # uploads first: the new release is not in the cloud yet, so (e) is a real upload
        row["e_direct_up"] = measure(link, lambda: wan.put(new, up_path, via="direct"))
        for mode, kind in (("f_rsync_delta_up", "rsync"), ("g_version_delta_up", "version")):
            settled(setup, old, up_path)
            background.settle()  # the old release's checksum list is in the store
            # content the cloud does not hold yet (the new release plus 64 bytes of its own): the job
            # stores it in S3, as it would a new version, instead of finding it stored by (e)
            fresh = unique_copy(new, work, f"{mode}-{uuid.uuid4().hex[:8]}")
            result: dict = {}
            if kind == "rsync":  # against the checksum list kept from the old release's upload
                put = lambda r=result, f=fresh: r.update(wan.put(f, up_path, via="delta"))  # noqa: E731
            else:
                put = lambda r=result, f=fresh: r.update(  # noqa: E731
                    wan.put(f, up_path, base=old, delta_kind="version", force_delta=True)
                )
            row[mode] = measure(link, put)
            row[mode]["steps"] = result.get("steps", {})
            row[mode]["eq2_says_delta"] = auto.upload_pays(
                row["size"], result.get("sent_bytes", row["size"]), auto.rates(wan.store)
            )
            background.settle()
        settled(setup, new, down_path)  # the previous release becomes a retained old version
        row["a_direct"] = measure(link, lambda: wan.get(down_path, work / "a.tar", via="direct"))
        row["b_relay"] = measure(link, lambda: wan.get(down_path, work / "b.tar", via="relay"))
        held = work / "held.tar"
        for mode, delta_mode in (("c_rsync_delta", "rsync"), ("d_version_delta", "auto")):
            shutil.copyfile(old, held)
            wan.store.remember(down_path, old_hash, held, None)  # the client got the old release earlier
            row[mode] = measure(
                link, lambda m=delta_mode: wan.get(down_path, held, via="delta", delta_mode=m)
            )
            row[mode]["kind"] = wan.last_transfer.get("kind")
            row[mode]["steps"] = wan.last_transfer.get("steps") or {
                "job": wan.last_transfer.get("job_seconds", 0)
            }
            assert held.read_bytes() == new.read_bytes(), f"{mode} rebuilt wrong bytes"
            background.settle()
    for name in ("a.tar", "b.tar"):
        assert (work / name).stat().st_size == row["size"]
    return row


def unique_copy(release: Path, work: Path, run_id: str) -> Path:
    """The release with this run's id appended (64 bytes after the tar's end, which tar ignores): the
    cloud stores content once by its hash, so a release some earlier run uploaded would otherwise
    make (e)'s direct upload send nothing."""
    copy = work / f"{run_id}-{release.name}"
    shutil.copyfile(release, copy)
    with open(copy, "ab") as f:
        f.write(run_id.encode().ljust(64, b"\0"))
    return copy


def summarize(rows: list[dict]) -> dict:
    def avg(mode: str, field: str) -> float:
        return statistics.mean(r[mode][field] for r in rows)

    base_down, base_up = avg("a_direct", "seconds"), avg("e_direct_up", "seconds")
    out = {
        m: {
            "avg_seconds": avg(m, "seconds"),
            "avg_bytes": avg(m, "bytes"),
            "avg_bytes_pct_of_file": statistics.mean(100 * r[m]["bytes"] / r["size"] for r in rows),
        }
        for m in MODES
    }
    for m in ("b_relay", "c_rsync_delta", "d_version_delta"):
        out[m]["time_reduction_vs_direct_pct"] = 100 * (1 - out[m]["avg_seconds"] / base_down)
        out[m]["best_reduction_pct"] = max(
            100 * (1 - r[m]["seconds"] / r["a_direct"]["seconds"]) for r in rows
        )
    for m in ("f_rsync_delta_up", "g_version_delta_up"):
        out[m]["time_reduction_vs_direct_pct"] = 100 * (1 - out[m]["avg_seconds"] / base_up)
    return out


DELTA_MODES = ["c_rsync_delta", "d_version_delta", "f_rsync_delta_up", "g_version_delta_up"]


def breakdown(rows: list[dict]) -> list[str]:
    """Average seconds of each step of the delta modes, from the client's clock and the job's report
    (client: compute = delta computed, job = request to result, fetch = delta fetched, apply =
    patched and hashed; cloud_* = inside the job)."""
    lines = ["", "| mode | total s | steps (avg s) |", "| --- | ---: | --- |"]
    for m in DELTA_MODES:
        names = sorted({k for r in rows for k in r[m].get("steps", {})})
        avg = {k: statistics.mean(r[m].get("steps", {}).get(k, 0.0) for r in rows) for k in names}
        total = statistics.mean(r[m]["seconds"] for r in rows)
        lines.append(f"| {m} | {total:.2f} | " + ", ".join(f"{k} {v:.2f}" for k, v in avg.items()) + " |")
    return lines


def markdown(doc: dict) -> str:
    lines = [f"Client link: {doc['link']}", "", f"Load average at start / end: {doc.get('load', '')}", ""]
    for series, data in doc["series"].items():
        lines += [
            f"## {series}",
            "",
            "| pair | MB | " + " | ".join(f"{m} s / KB" for m in MODES) + " |",
            "| --- | ---: | " + " | ".join("---:" for _ in MODES) + " |",
        ]
        for r in data["rows"]:
            cells = " | ".join(f"{r[m]['seconds']:.1f} / {r[m]['bytes'] / 1e3:.0f}" for m in MODES)
            lines.append(f"| {r['pair']} | {r['size'] / 1e6:.1f} | {cells} |")
        lines += [
            "",
            "| mode | avg s | avg bytes % of file | time reduction vs direct | best |",
            "| --- | ---: | ---: | ---: | ---: |",
        ]
        for m, s in data["summary"].items():
            red = s.get("time_reduction_vs_direct_pct")
            lines.append(
                f"| {m} | {s['avg_seconds']:.2f} | {s['avg_bytes_pct_of_file']:.2f}% | "
                f"{'' if red is None else f'{red:.1f}%'} | "
                f"{'' if 'best_reduction_pct' not in s else f'{s["best_reduction_pct"]:.1f}%'} |"
            )
        lines += breakdown(data["rows"])
        lines.append("")
    return "\n".join(lines)


RELAY_LINK = (50, 20)  # Mbit/s down and up, RTT ms: the client near the relay
S3_LINKS = [(50, 100), (30, 150), (20, 200)]  # ... and ever farther from S3's region


def relay_sweep(setup: HyCloud, url: str, key: str, file: Path, port: int, work: Path) -> list[dict]:
    """Direct (S3 over its link) against relay (the API over its link), and what `auto` then picks."""
    path, rows = "/bench/relay-choice.tar", []
    setup.put(file, path, parents=True, via="direct")
    for down, rtt in S3_LINKS:
        shape = {"target": ("127.0.0.1", port)}
        with (
            SpawnedWanLink(
                **shape, down_mbps=RELAY_LINK[0], up_mbps=RELAY_LINK[0], rtt_ms=RELAY_LINK[1]
            ) as near,
            SpawnedWanLink(**shape, down_mbps=down, up_mbps=down, rtt_ms=rtt) as far,
            split_links(near, far),
        ):
            # a client at this place: its own memory of the rates it measured there
            os.environ["HYCLOUD_STATE"] = str(work / f"state-{down}-{rtt}.sqlite3")
            client = HyCloud(api_url(url), key)
            row = {
                "s3_link": f"{down} Mbit/s, {rtt} ms",
                "relay_link": f"{RELAY_LINK[0]} Mbit/s, {RELAY_LINK[1]} ms",
            }
            for mode in ("direct", "relay"):
                started = time.perf_counter()
                client.get(path, work / f"{mode}.tar", via=mode)
                row[f"{mode}_s"] = time.perf_counter() - started
            (work / "auto.tar").unlink(missing_ok=True)  # no local base: direct or relay
            started = time.perf_counter()
            client.get(path, work / "auto.tar")
            row["auto_s"], row["auto_picks"] = time.perf_counter() - started, client.last_transfer["mode"]
        rows.append(row)
        print(row, flush=True)
    return rows


def relay_markdown(rows: list[dict], size: int) -> str:
    lines = [
        f"Direct (S3) against relay (EFS via the API) downloads of a {size / 1e6:.1f} MB file, each link emulated "
        "separately; `auto` after it has measured both (the relay cache is warm by then).",
        "",
        *result_files.table(
            ["S3 link", "relay link", "direct s", "relay s", "auto s", "auto picks"],
            "llrrrl",
            (
                [
                    r["s3_link"],
                    r["relay_link"],
                    f"{r['direct_s']:.2f}",
                    f"{r['relay_s']:.2f}",
                    f"{r['auto_s']:.2f}",
                    r["auto_picks"],
                ]
                for r in rows
            ),
        ),
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="3 releases per series")
    parser.add_argument("--releases", type=int, default=10)
    parser.add_argument("--down", type=float, default=50)
    parser.add_argument("--up", type=float, default=50)
    parser.add_argument("--rtt", type=float, default=100)
    parser.add_argument("--relay-only", action="store_true", help="only the direct-or-relay comparison")
    parser.add_argument(
        "--series", default=",".join(SERIES), help="comma-separated, of: " + ", ".join(SERIES)
    )
    args = parser.parse_args()
    n = 3 if args.quick else args.releases
    state = tempfile.TemporaryDirectory()
    os.environ["HYCLOUD_STATE"] = str(Path(state.name) / "state.sqlite3")  # this run's client memory
    local.start()
    outputs = local.deploy(log=lambda m: None)
    env = local.cloud_env()
    os.environ.update(env)
    key = create_user(outputs["TableName"], f"xfer-{uuid.uuid4().hex[:8]}")
    url = outputs["LocalApiUrl"]
    port = int(env["AWS_ENDPOINT_URL"].rsplit(":", 1)[1])
    setup = HyCloud(url, key)
    JOBS.update(jobs=CloudJobs(outputs["DeltaStateMachineArn"], outputs["TableName"]))
    if args.relay_only:
        with tempfile.TemporaryDirectory() as tmp:
            versions_of, fetch = SERIES["typescript"]
            file = fetch(versions_of(1)[0])
            rows = relay_sweep(setup, url, key, file, port, Path(tmp))
        result_files.write("relay_choice", {"rows": rows}, relay_markdown(rows, file.stat().st_size))
        print(relay_markdown(rows, file.stat().st_size))
        return
    doc = {"link": f"{args.down:g}/{args.up:g} Mbit/s down/up, RTT {args.rtt:g} ms", "series": {}}
    load_start = " ".join(f"{x:.2f}" for x in os.getloadavg())
    run_id = uuid.uuid4().hex
    with (
        SpawnedWanLink(
            target=("127.0.0.1", port), down_mbps=args.down, up_mbps=args.up, rtt_ms=args.rtt
        ) as link,
        tempfile.TemporaryDirectory() as tmp,
    ):
        for series in args.series.split(","):
            versions_of, fetch = SERIES[series]
            versions = versions_of(n)
            files = [unique_copy(fetch(v), Path(tmp), run_id) for v in versions]
            rows = []
            pairs = zip(
                zip(versions, files, strict=True), zip(versions[1:], files[1:], strict=True), strict=False
            )
            for (v_old, old), (v_new, new) in pairs:
                row = run_pair(setup, link, url, key, old, new, Path(tmp), series)
                row["pair"] = f"{v_old}→{v_new}"
                rows.append(row)
                print(
                    series,
                    row["pair"],
                    {m: (round(row[m]["seconds"], 2), row[m]["bytes"]) for m in MODES},
                    flush=True,
                )
            doc["series"][series] = {"rows": rows, "summary": summarize(rows)}
    doc["load"] = f"{load_start} / {' '.join(f'{x:.2f}' for x in os.getloadavg())}"
    result_files.write("transfer", doc, markdown(doc))
    print(markdown(doc))


if __name__ == "__main__":
    main()
