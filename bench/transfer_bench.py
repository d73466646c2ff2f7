"""Transfers over emulated client links (50 Mbit/s, RTT 100 ms; 10 Mbit/s, RTT 200 ms) on real release histories.

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

Each transfer is also set against the link's limit (bench/link_limit.py): one round trip plus the
bytes the link counted each way at that direction's rate; the report gives measured / limit per
mode, averaged over the pairs, for every link (issue 33: deltas within 2x of it).

    .venv/bin/python bench/transfer_bench.py [--quick] [--series typescript,django] [--links 50:100,10:200]

Needs the local deployment (started and deployed if absent); writes bench/results/transfer-links.{json,md}.
"""

from __future__ import annotations

import argparse
import itertools
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
from bench.link_limit import UNAVOIDABLE_ROUND_TRIPS, Link, mean_ratio, measured_ratio, parse_links, within  # noqa: E402
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
            JOBS["jobs"].await_settled(result["content_hash"])  # its S3 copy, made after the answer
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


def add_limits(row: dict, link: Link) -> dict:
    """Each mode's link limit and its measured time's ratio to it (`limit_s`, `ratio`)."""
    for m in MODES:
        row[m].update(measured_ratio(link, row[m]))
    return row


def summarize(rows: list[dict]) -> dict:
    def avg(mode: str, field: str) -> float:
        return statistics.mean(r[mode][field] for r in rows)

    base_down, base_up = avg("a_direct", "seconds"), avg("e_direct_up", "seconds")
    out = {
        m: {
            "avg_seconds": avg(m, "seconds"),
            "avg_bytes": avg(m, "bytes"),
            "avg_bytes_pct_of_file": statistics.mean(100 * r[m]["bytes"] / r["size"] for r in rows),
            "avg_limit_s": avg(m, "limit_s"),
            "avg_ratio_to_limit": mean_ratio(r[m]["ratio"] for r in rows),
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
UPLOAD_MODES = ("f_rsync_delta_up", "g_version_delta_up")
UPLOAD_WORK = ("compute", "cloud_patch", "cloud_commit")  # the steps no exchange takes out


def breakdown(rows: list[dict]) -> list[str]:
    """Average seconds of each step of the delta modes, from the client's clock and the job's report
    (client: compute = delta computed, job = request to result, fetch = delta fetched, apply =
    patched and hashed; cloud_* = inside the job). For an upload, `floor` adds to the link limit
    the work no exchange removes: the client's encode, the cloud's patch (verified before the
    acknowledgement) and its commit, as measured (a download's cloud encode may have run before it
    was asked for, so it has none)."""
    out = []
    for m in DELTA_MODES:
        names = sorted({k for r in rows for k in r[m].get("steps", {})})
        avg = {k: statistics.mean(r[m].get("steps", {}).get(k, 0.0) for r in rows) for k in names}
        total = statistics.mean(r[m]["seconds"] for r in rows)
        limit = statistics.mean(r[m]["limit_s"] for r in rows)
        steps = ", ".join(f"{k} {v:.2f}" for k, v in avg.items())
        floor = ""
        if m in UPLOAD_MODES:
            work = limit + sum(avg.get(k, 0.0) for k in UPLOAD_WORK)
            floor = f"{work:.2f} s = {work / limit:.2f}× limit"
        out.append([m, f"{total:.2f}", f"{limit:.2f}", floor, steps])
    headers = ["mode", "total s", "limit s", "floor (limit + work)", "steps (avg s)"]
    return ["", *result_files.table(headers, "lrrrl", out)]


def _pct(value: float | None) -> str:
    return "" if value is None else f"{value:.1f}%"


def pair_table(rows: list[dict]) -> list[str]:
    """Each pair's seconds and KB on the link, per mode."""
    header = ["pair", "MB", *(f"{m} s / KB" for m in MODES)]
    cells = (
        [
            r["pair"],
            f"{r['size'] / 1e6:.1f}",
            *(f"{r[m]['seconds']:.1f} / {r[m]['bytes'] / 1e3:.0f}" for m in MODES),
        ]
        for r in rows
    )
    return result_files.table(header, "lr" + "r" * len(MODES), cells)


def summary_table(summary: dict) -> list[str]:
    """Per mode: today's percentage figures, with the link limit and the ratio to it beside them."""
    header = [
        "mode", "avg s", "avg bytes % of file", "time reduction vs direct", "best",
        "avg limit s", "avg × limit", "within 2×",
    ]  # fmt: skip
    cells = (
        [
            m,
            f"{s['avg_seconds']:.2f}",
            f"{s['avg_bytes_pct_of_file']:.2f}%",
            _pct(s.get("time_reduction_vs_direct_pct")),
            _pct(s.get("best_reduction_pct")),
            f"{s['avg_limit_s']:.2f}",
            f"{s['avg_ratio_to_limit']:.2f}×",
            "yes" if within(s["avg_ratio_to_limit"]) else "no",
        ]
        for m, s in summary.items()
    )
    return result_files.table(header, "lrrrrrrl", cells)


def floor_ratio(measured: dict) -> float:
    """An upload's floor (breakdown) over its link limit, for one pair."""
    steps = measured.get("steps", {})
    return 1 + sum(steps.get(k, 0.0) for k in UPLOAD_WORK) / measured["limit_s"]


def overview_table(doc: dict) -> list[str]:
    """Per mode and link: the average ratio to the link limit over every pair of every series, and
    for an upload the average of its floor's (breakdown)."""
    links = doc["links"]
    heads = ("avg × limit", "within 2×", "floor avg × limit")
    header = ["mode"] + [f"{k} {h}" for k in links for h in heads]
    cells = []
    for m in MODES:
        row = [m]
        for data in links.values():
            rows = [r[m] for series in data["series"].values() for r in series["rows"]]
            avg = mean_ratio(r["ratio"] for r in rows)
            floor = f"{statistics.mean(floor_ratio(r) for r in rows):.2f}×" if m in UPLOAD_MODES else ""
            row += [f"{avg:.2f}×", "yes" if within(avg) else "no", floor]
        cells.append(row)
    return result_files.table(header, "l" + "rlr" * len(links), cells)


def markdown(doc: dict) -> str:
    described = "; ".join(f"`{k}` = {data['link']}" for k, data in doc["links"].items())
    lines = [
        f"Client links: {described}",
        "",
        f"Link limit of a transfer: {doc['round_trips']} RTT (a request and its response) + bytes up / up "
        "rate + bytes down / down rate, bytes as the link counted them (payload: HTTP headers and "
        "bodies). × limit = measured time / limit, averaged over the pairs.",
        "",
        f"Load average at start / end: {doc.get('load', '')}",
        "",
        "## Ratio to the link limit, every series",
        "",
        *overview_table(doc),
        "",
    ]
    for key, data in doc["links"].items():
        for series, s in data["series"].items():
            lines += [f"## {series}, link {key} ({data['link']})", "", *pair_table(s["rows"]), ""]
            lines += [*summary_table(s["summary"]), *breakdown(s["rows"]), ""]
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


def run_series(link, spec: Link, url: str, key: str, series: str, n: int, work: Path) -> dict:
    """Every consecutive pair of `series`' last `n` releases over one link. The releases are made
    unique to this link's run (so nothing the cloud holds from an earlier link or run is reused)."""
    versions_of, fetch = SERIES[series]
    versions = versions_of(n)
    slug = spec.key.replace(":", "-").replace("/", "_")  # a file and path name part
    files = [unique_copy(fetch(v), work, f"{uuid.uuid4().hex}-{slug}") for v in versions]
    setup, tag, rows = HyCloud(url, key), f"{series}-{slug}", []
    for (v_old, old), (v_new, new) in itertools.pairwise(zip(versions, files, strict=True)):
        row = add_limits(run_pair(setup, link, url, key, old, new, work, tag), spec)
        row["pair"] = f"{v_old}→{v_new}"
        rows.append(row)
        print(
            spec.key,
            series,
            row["pair"],
            {m: (round(row[m]["seconds"], 2), round(row[m]["ratio"], 2)) for m in MODES},
            flush=True,
        )
    return {"rows": rows, "summary": summarize(rows)}


def run_link(spec: Link, port: int, url: str, key: str, args: argparse.Namespace, work: Path) -> dict:
    """All series over one emulated link, with a client memory of its own (the rates it measured
    on another link would steer its choices here)."""
    os.environ["HYCLOUD_STATE"] = str(work / f"state-{uuid.uuid4().hex[:8]}.sqlite3")
    shape = {"down_mbps": spec.down_mbps, "up_mbps": spec.up_mbps, "rtt_ms": spec.rtt_ms}
    with SpawnedWanLink(target=("127.0.0.1", port), **shape) as link:
        series = {s: run_series(link, spec, url, key, s, args.releases, work) for s in args.series.split(",")}
    return {"link": spec.describe(), "series": series}


def load_average() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="3 releases per series")
    parser.add_argument("--releases", type=int, default=10)
    parser.add_argument(
        "--links", default="50:100,10:200", help="client links DOWN[/UP]:RTT (Mbit/s, ms), comma-separated"
    )
    parser.add_argument("--relay-only", action="store_true", help="only the direct-or-relay comparison")
    parser.add_argument(
        "--series", default=",".join(SERIES), help="comma-separated, of: " + ", ".join(SERIES)
    )
    args = parser.parse_args()
    args.releases = 3 if args.quick else args.releases
    try:
        args.links = parse_links(args.links)
    except ValueError as err:
        parser.error(str(err))
    return args


def relay_only(setup: HyCloud, url: str, key: str, port: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        versions_of, fetch = SERIES["typescript"]
        file = fetch(versions_of(1)[0])
        rows = relay_sweep(setup, url, key, file, port, Path(tmp))
    result_files.write("relay_choice", {"rows": rows}, relay_markdown(rows, file.stat().st_size))
    print(relay_markdown(rows, file.stat().st_size))


def main() -> None:
    args = parse_args()
    state = tempfile.TemporaryDirectory()
    os.environ["HYCLOUD_STATE"] = str(Path(state.name) / "state.sqlite3")  # this run's client memory
    outputs, env = local.running_deployment()
    key = create_user(outputs["TableName"], f"xfer-{uuid.uuid4().hex[:8]}")
    url = outputs["LocalApiUrl"]
    port = int(env["AWS_ENDPOINT_URL"].rsplit(":", 1)[1])
    JOBS.update(jobs=CloudJobs(outputs["DeltaStateMachineArn"], outputs["TableName"]))
    if args.relay_only:
        relay_only(HyCloud(url, key), url, key, port)
        return
    doc: dict = {"round_trips": UNAVOIDABLE_ROUND_TRIPS, "links": {}}
    load_start = load_average()
    with tempfile.TemporaryDirectory() as tmp:
        for spec in args.links:
            doc["links"][spec.key] = run_link(spec, port, url, key, args, Path(tmp))
    doc["load"] = f"{load_start} / {load_average()}"
    result_files.write("transfer-links", doc, markdown(doc))
    print(markdown(doc))


if __name__ == "__main__":
    main()
