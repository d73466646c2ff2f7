"""Delta sync on real release history, side by side with librsync's rdiff (seed 000 Figs. 13-14).

Inputs: consecutive releases of the npm package `typescript` (5.x) and consecutive Django sdists
(5.2.x), fetched by `npm pack` and `pip download`, gunzipped to plain .tar under bench/.cache/.
For each consecutive pair and each candidate chunk size it runs signature, delta and patch with
hycloud_core.delta and with `rdiff` at the same block size and strong-sum length, and records
throughput and bytes. Traffic of a delta download = checksum list sent + compressed delta received
(rdiff's delta compressed with the same zstd level). It then replays the adaptive chunk-size
mechanism version by version, with the paper's γ and with the traffic-counting γ.

    python bench/delta_bench.py [--quick] [--series typescript,django,gevent,openssl] [--repeat 1]
                                [--versions N] [--sizes 512,1024,...]

Two series where consecutive releases differ by many small changes spread over many files (the
case where matches do not come in long runs): gevent's sdists (a third C: vendored libev, libuv and
c-ares, and Cython-generated C; 37-39 MB as .tar) and OpenSSL 3.5.x, a C project's own releases, as
the `openssl-src` crate ships them (46-50 MB as .tar, fetched with `cargo fetch`).

Beside each block size it records the 1-minute load average and the context switches of signature +
delta in the fastest repeat: voluntary ones would mean the engine waits (I/O, page faults on a
mapped file, a lock), involuntary ones that the machine's load preempted it; a wall ratio below the
CPU ratio with few voluntary switches is the load, not the engine.

Needs `rdiff` (Debian: apt-get install rdiff), `npm`, `cargo` and network access to the npm
registry, PyPI and crates.io. Writes bench/results/delta.json and .md, and delta_gevent and
delta_openssl (.json and .md) for the C series alone.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import zstandard

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT.parent / "layers" / "core"))

import result_files  # noqa: E402

from hycloud_core.delta import (  # noqa: E402
    CANDIDATE_SIZES,
    AdaptiveChunkSize,
    GammaMode,
    PredictiveChunkSize,
    TrafficSample,
    default_strong_len,
    delta,
    patch,
)
from hycloud_core.delta.encoder import DEFAULT_LEVEL  # noqa: E402
from hycloud_core.delta.signature import compute  # noqa: E402

CACHE = ROOT / ".cache" / "delta"
# Deltas and patched files, ours and rdiff's, go to memory (tmpfs) where there is one: on disk, the
# kernel's writeback throttled whichever patch ran when the dirty pages crossed their limit, and the
# same `rdiff patch` took 33 to 101 ms from one run to the next.
WORK_DIR = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None
DEFAULT_MODE = GammaMode.TRAFFIC
DEFAULT_REPLAY = "traffic predicted"  # what the client uses
MB = 1e6


# ---------------------------------------------------------------- inputs


def _run(cmd: list[str], cwd: Path | None = None) -> str:
    return subprocess.run(cmd, cwd=cwd, check=True, capture_output=True, text=True).stdout


def _semver_key(v: str) -> tuple[int, ...]:
    return tuple(int(p) for p in v.split("."))


def typescript_versions(n: int) -> list[str]:
    versions = json.loads(_run(["npm", "view", "typescript", "versions", "--json"]))
    stable = sorted((v for v in versions if re.fullmatch(r"5\.\d+\.\d+", v)), key=_semver_key)
    return stable[-n:]


def django_versions(n: int) -> list[str]:
    out = _run([sys.executable, "-m", "pip", "index", "versions", "django"])
    listed = re.search(r"Available versions: (.*)", out).group(1).split(", ")
    series = sorted((v for v in listed if re.fullmatch(r"5\.2\.\d+", v)), key=_semver_key)
    return series[-n:]


def gevent_versions(n: int) -> list[str]:
    out = _run([sys.executable, "-m", "pip", "index", "versions", "gevent"])
    listed = re.search(r"Available versions: (.*)", out).group(1).split(", ")
    series = sorted((v for v in listed if re.fullmatch(r"2[56]\.\d+\.\d+", v)), key=_semver_key)
    return series[-n:]


# OpenSSL's releases as the `openssl-src` crate ships them (its source tree, 46-50 MB as .tar): patch
# releases of one C project, each a few hundred small fixes spread over hundreds of files. One crate
# per OpenSSL release (the latest crate when several carry the same one), oldest first.
OPENSSL_CRATES = ("300.5.0+3.5.0", "300.5.1+3.5.1", "300.5.2+3.5.2", "300.5.4+3.5.4", "300.5.5+3.5.5")


def openssl_versions(n: int) -> list[str]:
    return [v.split("+")[1] for v in OPENSSL_CRATES[-n:]]


def _gunzip(src: Path, dst: Path) -> None:
    tmp = dst.with_suffix(".part")
    with gzip.open(src, "rb") as fin, open(tmp, "wb") as fout:
        shutil.copyfileobj(fin, fout, 1 << 20)
    tmp.rename(dst)


def fetch_typescript(version: str) -> Path:
    folder = CACHE / "typescript"
    tar = folder / f"typescript-{version}.tar"
    if not tar.exists():
        folder.mkdir(parents=True, exist_ok=True)
        tgz = folder / f"typescript-{version}.tgz"
        if not tgz.exists():
            _run(["npm", "pack", f"typescript@{version}", "--pack-destination", str(folder)])
        _gunzip(tgz, tar)
    return tar


def fetch_sdist(project: str, version: str) -> Path:
    """A PyPI source release as an uncompressed .tar (pip download, cached)."""
    folder = CACHE / project
    tar = folder / f"{project}-{version}.tar"
    if not tar.exists():
        folder.mkdir(parents=True, exist_ok=True)
        sdist = folder / f"{project}-{version}.tar.gz"
        if not sdist.exists():
            _run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
                  f"{project}=={version}", "-d", str(folder), "-q"])  # fmt: skip
        _gunzip(sdist, tar)
    return tar


def fetch_django(version: str) -> Path:
    return fetch_sdist("django", version)


def fetch_gevent(version: str) -> Path:
    return fetch_sdist("gevent", version)


def fetch_openssl(version: str) -> Path:
    """`cargo fetch` of a throwaway crate that pins `openssl-src`, into a CARGO_HOME of our own."""
    folder = CACHE / "openssl"
    tar = folder / f"openssl-{version}.tar"
    if not tar.exists():
        crate_version = next(v for v in OPENSSL_CRATES if v.endswith("+" + version))
        home = folder / "cargo"
        crates = list(home.glob(f"registry/cache/*/openssl-src-{crate_version}.crate"))
        if not crates:
            with tempfile.TemporaryDirectory(prefix="openssl-fetch-") as tmp:
                (Path(tmp) / "src").mkdir()
                (Path(tmp) / "src" / "lib.rs").write_text("")
                (Path(tmp) / "Cargo.toml").write_text(
                    '[package]\nname = "fetch"\nversion = "0.0.0"\nedition = "2021"\n\n'
                    f'[dependencies]\nopenssl-src = "={crate_version}"\n'
                )
                subprocess.run(
                    ["cargo", "fetch", "-q"], cwd=tmp, check=True, env={**os.environ, "CARGO_HOME": str(home)}
                )
            crates = list(home.glob(f"registry/cache/*/openssl-src-{crate_version}.crate"))
        _gunzip(crates[0], tar)
    return tar


SERIES = {
    "typescript": (typescript_versions, fetch_typescript),
    "django": (django_versions, fetch_django),
    # C: the sdists vendor libev, libuv and c-ares and ship Cython-generated C; 37-39 MB as .tar,
    # with small changes spread over many files from one release to the next
    "gevent": (gevent_versions, fetch_gevent),
    # a C project's own releases: OpenSSL 3.5.x, 2/3 of the bytes C, 3,758 files
    "openssl": (openssl_versions, fetch_openssl),
}
C_SERIES = ("gevent", "openssl")  # also reported on their own (delta_<series>.*)


# ---------------------------------------------------------------- measurements


@dataclass
class Row:
    series: str
    old: str
    new: str
    block: int
    strong_len: int
    old_size: int
    new_size: int
    # ours
    sig_raw: int
    sig_wire: int
    delta_raw: int
    delta_zstd: int
    sig_s: float
    delta_s: float
    patch_s: float
    # rdiff
    rd_sig: int
    rd_sig_zstd: int
    rd_delta_raw: int
    rd_delta_zstd: int
    rd_sig_s: float
    rd_delta_s: float
    rd_patch_s: float
    rd_zstd_s: float
    # CPU seconds (0 in rows measured before CPU time was recorded)
    sig_cpu: float = 0.0
    delta_cpu: float = 0.0
    patch_cpu: float = 0.0
    rd_sig_cpu: float = 0.0
    rd_delta_cpu: float = 0.0
    rd_patch_cpu: float = 0.0
    rd_zstd_cpu: float = 0.0
    # rdiff's delta as it would travel: decompressing it (zstd, as ours) before `rdiff patch`
    rd_unzstd_s: float = 0.0
    rd_unzstd_cpu: float = 0.0
    # context switches in signature + delta, in the fastest repeat: voluntary ones mean the process
    # waited (I/O, a lock), involuntary ones that it was preempted (the machine's load)
    sd_vcs: int = 0
    sd_ics: int = 0
    rd_sd_vcs: int = 0
    rd_sd_ics: int = 0
    load1: float = 0.0  # 1-minute load average when the pair was measured

    @property
    def traffic(self) -> int:
        return self.sig_wire + self.delta_zstd

    @property
    def rd_traffic(self) -> int:
        return self.rd_sig + self.rd_delta_zstd

    def sample(self) -> TrafficSample:
        return TrafficSample(self.block, self.new_size, self.sig_wire, self.delta_zstd)


class _Best:
    """Minimum wall and CPU seconds per operation over the repeats, and the context switches
    (voluntary, involuntary) of the fastest one."""

    def __init__(self) -> None:
        self.wall: dict[str, float] = {}
        self.cpu: dict[str, float] = {}
        self.switches: dict[str, tuple[int, int]] = {}

    def run(self, name: str, fn, cpu_clock):
        who = resource.RUSAGE_SELF if cpu_clock is time.process_time else resource.RUSAGE_CHILDREN
        u0, c0, w0 = resource.getrusage(who), cpu_clock(), time.perf_counter()
        result = fn()
        wall, cpu, u1 = time.perf_counter() - w0, cpu_clock() - c0, resource.getrusage(who)
        if wall < self.wall.get(name, float("inf")):
            self.switches[name] = (u1.ru_nvcsw - u0.ru_nvcsw, u1.ru_nivcsw - u0.ru_nivcsw)
        self.wall[name] = min(self.wall.get(name, wall), wall)
        self.cpu[name] = min(self.cpu.get(name, cpu), cpu)
        return result

    def sig_delta_switches(self) -> dict[str, int]:
        ours = [sum(x) for x in zip(self.switches["sig"], self.switches["delta"], strict=True)]
        rd = [sum(x) for x in zip(self.switches["rd_sig"], self.switches["rd_delta"], strict=True)]
        return dict(sd_vcs=ours[0], sd_ics=ours[1], rd_sd_vcs=rd[0], rd_sd_ics=rd[1])


def _children_cpu() -> float:
    """CPU seconds (user + system) of the finished child processes: rdiff's own time."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _sha(path: Path) -> bytes:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.digest()


def measure_pair(old: Path, new: Path, block: int, strong_len: int, work: Path, repeat: int) -> dict:
    """Ours and rdiff, operation by operation, interleaved within every repeat so both see the same
    load; the minimum over the repeats, wall and CPU, for each. Our CPU clock is this process's,
    rdiff's the finished children's."""
    best = _Best()
    own, kids = time.process_time, _children_cpu
    rd = ["rdiff", "-f"]
    rd_sig, rd_delta, rd_out = work / "rd.sig", work / "rd.delta", work / "rd.out"
    ours_delta, ours_out = work / "ours.delta", work / "ours.out"

    def sign() -> bytes:
        with open(old, "rb") as f:
            return compute(f, block, strong_len).encode()

    def diff(sig: bytes):
        with open(new, "rb") as f, open(ours_delta, "wb") as out:
            return delta(sig, f, out, DEFAULT_LEVEL)

    def apply() -> None:
        with open(old, "rb") as f, open(ours_delta, "rb") as d, open(ours_out, "wb") as o:
            patch(f, d, o)

    for _ in range(repeat):
        sig = best.run("sig", sign, own)
        best.run("rd_sig", lambda: _run(rd + ["-b", str(block), "-S", str(strong_len), "signature", str(old), str(rd_sig)]), kids)  # fmt: skip
        stats = best.run("delta", lambda sig=sig: diff(sig), own)
        best.run("rd_delta", lambda: _run(rd + ["delta", str(rd_sig), str(new), str(rd_delta)]), kids)
        best.run("patch", apply, own)
        best.run("rd_patch", lambda: _run(rd + ["patch", str(old), str(rd_delta), str(rd_out)]), kids)
        raw = rd_delta.read_bytes()
        packed = best.run(
            "rd_zstd", lambda raw=raw: zstandard.ZstdCompressor(level=DEFAULT_LEVEL).compress(raw), own
        )
        best.run("rd_unzstd", lambda packed=packed: zstandard.ZstdDecompressor().decompress(packed), own)
    want = _sha(new)
    if _sha(ours_out) != want:
        raise SystemExit(f"patched output differs from {new.name} (block {block})")
    if _sha(rd_out) != want:
        raise SystemExit(f"rdiff patch output differs from {new.name} (block {block})")
    sig_bytes = rd_sig.read_bytes()
    n = -(-os.path.getsize(old) // block)
    return dict(
        sig_raw=19 + n * (4 + strong_len),
        sig_wire=len(sig),
        delta_raw=stats.raw_bytes,
        delta_zstd=stats.compressed_bytes,
        **{f"{k}_s": v for k, v in best.wall.items()},
        rd_sig=len(sig_bytes),
        rd_sig_zstd=len(zstandard.ZstdCompressor(level=DEFAULT_LEVEL).compress(sig_bytes)),
        rd_delta_raw=len(raw),
        rd_delta_zstd=len(packed),
        **{f"{k}_cpu": v for k, v in best.cpu.items()},
        **best.sig_delta_switches(),
        load1=os.getloadavg()[0],
    )


def measure_series(name: str, files: list[tuple[str, Path]], sizes, repeat: int) -> list[Row]:
    rows = []
    with tempfile.TemporaryDirectory(prefix="delta-bench-", dir=WORK_DIR) as tmp:
        work = Path(tmp)
        for (v_old, old), (v_new, new) in zip(files, files[1:], strict=False):
            old_size, new_size = os.path.getsize(old), os.path.getsize(new)
            for block in sizes:
                strong_len = default_strong_len(old_size, block)
                measured = measure_pair(old, new, block, strong_len, work, repeat)
                row = Row(name, v_old, v_new, block, strong_len, old_size, new_size, **measured)
                rows.append(row)
                print(
                    f"{name} {v_old}->{v_new} b={block:>5} S={strong_len} "
                    f"traffic {row.traffic:>9} vs rdiff {row.rd_traffic:>9} ({row.traffic / row.rd_traffic:.3f}x)  "
                    f"sig+delta {_mbps(old_size + new_size, row.sig_s + row.delta_s):6.0f} MB/s "
                    f"vs rdiff {_mbps(old_size + new_size, row.rd_sig_s + row.rd_delta_s):6.0f} MB/s  "
                    f"patch CPU {row.patch_cpu * 1e3:5.1f} ms vs rdiff {row.rd_patch_cpu * 1e3:5.1f} ms  "
                    f"load {row.load1:.1f}",
                    flush=True,
                )
    return rows


def _mbps(n: int, seconds: float) -> float:
    return n / MB / seconds if seconds > 0 else float("inf")


# ---------------------------------------------------------------- adaptive replay


def replay(rows: list[Row], sizes, mode: GammaMode, predictive: bool = False) -> dict:
    """Fig. 14: per version, traffic at the adaptively chosen size over the best fixed size."""
    pairs: dict[tuple[str, str], dict[int, Row]] = {}
    for r in rows:
        pairs.setdefault((r.old, r.new), {})[r.block] = r
    ordered = list(pairs.items())
    state = (
        PredictiveChunkSize(sizes=tuple(sizes))
        if predictive
        else AdaptiveChunkSize(sizes=tuple(sizes), mode=mode)
    )
    steps, total = [], 0
    for index, ((_, v_new), by_size) in enumerate(ordered):
        any_row = next(iter(by_size.values()))
        choice = state.choose(any_row.old_size, any_row.new_size)
        best = min(by_size.values(), key=lambda r: r.traffic)
        traffic = by_size[choice].traffic
        total += traffic
        steps.append(
            dict(
                version=v_new,
                version_number=index + 2,
                choice=choice,
                traffic=traffic,
                best_block=best.block,
                best_traffic=best.traffic,
                ratio=traffic / best.traffic,
            )  # fmt: skip
        )
        # the background measurement after download
        state.learn([by_size[s].sample() for s in sizes], any_row.old_size, any_row.new_size)
    fixed_totals = {s: sum(by_size[s].traffic for _, by_size in ordered) for s in sizes}
    return dict(
        mode=str(mode) + (" predicted" if predictive else ""),
        steps=steps,
        total=total,
        fixed_totals=fixed_totals,
        final_state=state.to_dict(),
    )


def replay_checks(result: dict) -> dict:
    """The issue's targets, plus the floor no chooser can pass: the sum of the per-version bests.

    When one size is best at every version, that fixed size's total is the floor, so no chooser
    of one size per download can be below it, only equal.
    """
    steps = result["steps"]
    late = [s["ratio"] for s in steps if s["version_number"] >= 4]
    bests = {s["best_block"] for s in steps}
    return dict(
        max_ratio_from_4th=max(late) if late else None,
        within_1_1_from_4th=all(r <= 1.1 for r in late) if late else None,
        below_every_fixed_total=all(result["total"] < t for t in result["fixed_totals"].values()),
        best_fixed_total=min(result["fixed_totals"].values()),
        floor_total=sum(s["best_traffic"] for s in steps),
        best_at_every_version=bests.pop() if len(bests) == 1 else None,
    )


# ---------------------------------------------------------------- report


def summarize(rows: list[Row]) -> list[dict]:
    out = []
    for series in dict.fromkeys(r.series for r in rows):
        for block in dict.fromkeys(r.block for r in rows):
            sel = [r for r in rows if r.series == series and r.block == block]
            if not sel:
                continue
            old_b = sum(r.old_size for r in sel)
            new_b = sum(r.new_size for r in sel)
            t = {k: sum(getattr(r, k) for r in sel) for k in Row.__dataclass_fields__ if k.endswith("_s")}
            cpu = {k: sum(getattr(r, k) for r in sel) for k in Row.__dataclass_fields__ if k.endswith("_cpu")}
            traffic, rd_traffic = sum(r.traffic for r in sel), sum(r.rd_traffic for r in sel)
            ours_sd = _mbps(old_b + new_b, t["sig_s"] + t["delta_s"])
            rd_sd = _mbps(old_b + new_b, t["rd_sig_s"] + t["rd_delta_s"])
            out.append(
                dict(
                    series=series,
                    block=block,
                    pairs=len(sel),
                    sig_mbps=_mbps(old_b, t["sig_s"]),
                    delta_mbps=_mbps(new_b, t["delta_s"]),
                    patch_mbps=_mbps(new_b, t["patch_s"]),
                    rd_sig_mbps=_mbps(old_b, t["rd_sig_s"]),
                    rd_delta_mbps=_mbps(new_b, t["rd_delta_s"]),
                    rd_patch_mbps=_mbps(new_b, t["rd_patch_s"]),
                    sig_delta_mbps=ours_sd,
                    rd_sig_delta_mbps=rd_sd,
                    rd_sig_delta_zstd_mbps=_mbps(
                        old_b + new_b, t["rd_sig_s"] + t["rd_delta_s"] + t["rd_zstd_s"]
                    ),
                    throughput_ratio=ours_sd / rd_sd,
                    # the floor of any patch of a compressed delta: decompressing it, against rdiff's
                    # whole patch of its uncompressed one
                    unzstd_share_cpu=cpu["rd_unzstd_cpu"] / cpu["rd_patch_cpu"]
                    if cpu["rd_patch_cpu"]
                    else None,
                    **speed_ratios(t, "_s"),
                    **{f"{k}_cpu": v for k, v in speed_ratios(cpu, "_cpu").items()},
                    sig_raw=sum(r.sig_raw for r in sel),
                    sig_wire=sum(r.sig_wire for r in sel),
                    delta_raw=sum(r.delta_raw for r in sel),
                    delta_zstd=sum(r.delta_zstd for r in sel),
                    rd_sig=sum(r.rd_sig for r in sel),
                    rd_sig_zstd=sum(r.rd_sig_zstd for r in sel),
                    rd_delta_raw=sum(r.rd_delta_raw for r in sel),
                    rd_delta_zstd=sum(r.rd_delta_zstd for r in sel),
                    traffic=traffic,
                    rd_traffic=rd_traffic,
                    traffic_ratio=traffic / rd_traffic,
                    new_bytes=new_b,
                    **{
                        k: sum(getattr(r, k) for r in sel)
                        for k in ("sd_vcs", "sd_ics", "rd_sd_vcs", "rd_sd_ics")
                    },
                    load1=max(r.load1 for r in sel),
                )
            )
    return out


def speed_ratios(t: dict[str, float], suffix: str) -> dict[str, float | None]:
    """rdiff's time over ours (above 1: ours is faster), per operation and for signature + delta."""

    def ratio(ours: float, theirs: float) -> float | None:
        return theirs / ours if ours > 0 and theirs > 0 else None

    sig, dl, pt = (t["sig" + suffix], t["delta" + suffix], t["patch" + suffix])
    rsig, rdl, rpt = (t["rd_sig" + suffix], t["rd_delta" + suffix], t["rd_patch" + suffix])
    unzstd = t.get("rd_unzstd" + suffix, 0.0)
    return dict(
        sig_x=ratio(sig, rsig),
        delta_x=ratio(dl, rdl),
        sig_delta_x=ratio(sig + dl, rsig + rdl),
        patch_x=ratio(pt, rpt),
        patch_unzstd_x=ratio(pt, rpt + unzstd) if unzstd else None,
    )


def _x(wall: float | None, cpu: float | None) -> str:
    return " / ".join("n/a" if v is None else f"{v:.2f}x" for v in (wall, cpu))


def speed_table(doc: dict, series: str) -> list[str]:
    lines = [
        "Speed against rdiff (rdiff's time over ours, wall / CPU; above 1x ours is faster). Our delta "
        "is zstd-compressed and our patch decompresses it; the last column adds the decompression of "
        "rdiff's delta, compressed the same way, to rdiff's patch. The last column is the CPU time of "
        "that decompression alone over rdiff's whole patch of its uncompressed delta: a patch that must "
        "decompress a zstd delta, and still write the whole new file, cannot match `rdiff patch` where "
        "that share nears 1. Context switches are those of signature + delta in the fastest repeat "
        "(voluntary: the process waited; involuntary: it was preempted), ours / rdiff's; load is the "
        "1-minute load average when the block size was measured:",
        "",
        "| block | signature | delta | signature + delta | patch | patch vs rdiff patch + unzstd "
        "| unzstd alone / rdiff patch, CPU | voluntary switches | involuntary switches | load |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    keys = ("sig_x", "delta_x", "sig_delta_x", "patch_x", "patch_unzstd_x")
    for s in (s for s in doc["summary"] if s["series"] == series):
        cells = [_x(s.get(k), s.get(k + "_cpu")) for k in keys]
        share = s.get("unzstd_share_cpu")
        cells.append("n/a" if share is None else f"{share:.2f}")
        cells.append(f"{s.get('sd_vcs', 0)} / {s.get('rd_sd_vcs', 0)}")
        cells.append(f"{s.get('sd_ics', 0)} / {s.get('rd_sd_ics', 0)}")
        cells.append(f"{s.get('load1', 0):.1f}")
        lines.append(f"| {s['block']} | " + " | ".join(cells) + " |")
    return lines + [""]


def _load_note(load: dict | None) -> str:
    if not load:
        return ""
    before, after = (", ".join(f"{x:.1f}" for x in load[k]) for k in ("before", "after"))
    return (
        f" Load average (1, 5, 15 min) on {load['cores']} cores: {before} at the start, {after} at the end."
    )


def _fmt(ratio: float | None) -> str:
    return "n/a (fewer than 4 versions)" if ratio is None else f"{ratio:.3f}"


def markdown(doc: dict) -> str:
    lines = [
        "# Delta sync benchmark",
        "",
        f"Command: `{doc['command']}`. zstd level {doc['zstd_level']} on both deltas. "
        "Traffic = checksum list + zstd(delta); rdiff at the same block size and strong-sum length. "
        f"Times are the minimum of {doc['repeat']} run(s), ours and rdiff's interleaved operation by "
        "operation, on a shared 2-core machine (other jobs running); CPU time is user + system (ours: "
        "this process; rdiff: its process). MB/s columns (wall) are summed over all pairs; sig+delta "
        "counts old+new bytes over signature+delta time; rdiff's time excludes zstd (ours includes it). "
        f"Deltas and patched files, both tools', are written to {doc.get('work_dir') or 'a temporary folder on disk'}."
        + _load_note(doc.get("load")),
        "",
    ]
    for series, versions in doc["versions"].items():
        lines += [f"## {series}: {', '.join(versions)}", ""]
        lines += speed_table(doc, series)
        lines += [
            "| block | sig MB/s | delta MB/s | patch MB/s | rdiff sig | rdiff delta | rdiff patch "
            "| sig+delta vs rdiff | checksum list (raw/wire) | rdiff sig | delta raw / zstd | rdiff delta raw / zstd "
            "| traffic | rdiff traffic | ratio |",
            "|" + "---|" * 15,
        ]
        for s in (s for s in doc["summary"] if s["series"] == series):
            lines.append(
                f"| {s['block']} | {s['sig_mbps']:.0f} | {s['delta_mbps']:.0f} | {s['patch_mbps']:.0f} "
                f"| {s['rd_sig_mbps']:.0f} | {s['rd_delta_mbps']:.0f} | {s['rd_patch_mbps']:.0f} "
                f"| {s['throughput_ratio']:.2f}x | {s['sig_raw']:,} / {s['sig_wire']:,} | {s['rd_sig']:,} "
                f"| {s['delta_raw']:,} / {s['delta_zstd']:,} | {s['rd_delta_raw']:,} / {s['rd_delta_zstd']:,} "
                f"| {s['traffic']:,} | {s['rd_traffic']:,} | {s['traffic_ratio']:.3f} |"
            )
        lines.append("")
        for mode, result in doc["adaptive"][series].items():
            checks = result["checks"]
            lines += [
                f"### Adaptive chunk size, {mode} γ{' (default)' if mode == DEFAULT_REPLAY else ''}",
                "",
                "| version | chosen | traffic | best fixed | best traffic | ratio |",
                "|---|---|---|---|---|---|",
            ]
            for st in result["steps"]:
                lines.append(
                    f"| {st['version']} | {st['choice']} | {st['traffic']:,} | {st['best_block']} "
                    f"| {st['best_traffic']:,} | {st['ratio']:.3f} |"
                )
            fixed = ", ".join(f"{k}: {v:,}" for k, v in result["fixed_totals"].items())
            lines += [
                "",
                f"Total {result['total']:,} bytes; fixed totals {fixed}. "
                f"Max ratio from the 4th version: {_fmt(checks['max_ratio_from_4th'])}; "
                f"≤ 1.1 from the 4th version: {checks['within_1_1_from_4th']}; "
                f"below every fixed total: {checks['below_every_fixed_total']}. "
                f"Sum of the per-version bests (no chooser can move less): {checks['floor_total']:,}"
                + (
                    f"; {checks['best_at_every_version']} B is the best size at every version, so its fixed "
                    "total is that floor and no chooser can be below it."
                    if checks["best_at_every_version"]
                    else "."
                ),
                "",
            ]
    lines += ["## Targets", ""] + [f"- {k}: {v}" for k, v in doc["targets"].items()] + [""]
    return "\n".join(lines)


def targets(summary: list[dict], adaptive: dict) -> dict:
    worst_traffic = max(summary, key=lambda s: s["traffic_ratio"])
    worst_speed = min(summary, key=lambda s: s["throughput_ratio"])
    out = {
        "traffic <= 1.05x rdiff at every (series, block)": all(s["traffic_ratio"] <= 1.05 for s in summary),
        "worst traffic ratio": f"{worst_traffic['traffic_ratio']:.3f} ({worst_traffic['series']}, {worst_traffic['block']})",
        "sig+delta throughput >= 0.5x rdiff at every (series, block)": all(
            s["throughput_ratio"] >= 0.5 for s in summary
        ),
        "worst throughput ratio": f"{worst_speed['throughput_ratio']:.2f} ({worst_speed['series']}, {worst_speed['block']})",
    }
    for key, label in (
        ("sig_delta_x", "signature + delta"),
        ("patch_x", "patch"),
        ("patch_unzstd_x", "patch (rdiff's with unzstd)"),
    ):
        for clock, suffix in (("wall", ""), ("CPU", "_cpu")):
            figures = [(s[key + suffix], s["series"], s["block"]) for s in summary if s.get(key + suffix)]
            if figures:
                worst = min(figures)
                out[f"{label} >= 1x rdiff at every (series, block), {clock} time"] = worst[0] >= 1
                out[f"worst {label} ratio, {clock} time"] = f"{worst[0]:.2f} ({worst[1]}, {worst[2]})"
    for series, modes in adaptive.items():
        if DEFAULT_REPLAY not in modes:
            continue
        checks = modes[DEFAULT_REPLAY]["checks"]
        out[f"{series}: default ({DEFAULT_REPLAY}) <= 1.1x best from 4th version"] = checks[
            "within_1_1_from_4th"
        ]
        out[f"{series}: default total below every fixed candidate's total"] = checks[
            "below_every_fixed_total"
        ]
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="3 releases per series instead of 10")
    ap.add_argument("--series", default="typescript,django,gevent,openssl")
    ap.add_argument("--versions", type=int, help="releases per series (default 10, 3 with --quick)")
    ap.add_argument("--sizes", help="block sizes, comma-separated (default: the client's candidates)")
    ap.add_argument("--repeat", type=int, default=1, help="best of N timings")
    ap.add_argument("--out", type=Path, default=result_files.RESULTS)
    ap.add_argument(
        "--from-json", type=Path, help="re-report the rows of an earlier delta.json, measuring nothing"
    )
    args = ap.parse_args()
    if args.from_json:
        old = json.loads(args.from_json.read_text())
        rows = [Row(**r) for r in old["rows"]]
        return report(
            rows,
            old["versions"],
            old["sizes"],
            old["command"],
            old.get("repeat", 1),
            args.out,
            old.get("load"),
        )
    if not shutil.which("rdiff"):
        print("rdiff (librsync) is needed for the comparison: apt-get update && apt-get install -y rdiff")
        return 2
    load_before = os.getloadavg()
    n_versions = args.versions or (3 if args.quick else 10)
    sizes = [int(b) for b in args.sizes.split(",")] if args.sizes else list(CANDIDATE_SIZES)
    rows: list[Row] = []
    versions: dict[str, list[str]] = {}
    for name in args.series.split(","):
        list_versions, fetch = SERIES[name]
        versions[name] = list_versions(n_versions)
        print(f"{name}: fetching {', '.join(versions[name])}", flush=True)
        files = [(v, fetch(v)) for v in versions[name]]
        rows += measure_series(name, files, sizes, args.repeat)
    command = " ".join(["python bench/delta_bench.py", *sys.argv[1:]])
    load = dict(before=load_before, after=os.getloadavg(), cores=os.cpu_count())
    return report(rows, versions, sizes, command, args.repeat, args.out, load)


def report(
    rows: list[Row],
    versions: dict[str, list[str]],
    sizes: list[int],
    command: str,
    repeat: int,
    out: Path,
    load: dict | None = None,
) -> int:
    doc = document(rows, versions, sizes, command, repeat, load)
    result_files.write("delta", doc, markdown(doc), out)
    for name in (n for n in C_SERIES if n in versions):
        only = document(
            [r for r in rows if r.series == name], {name: versions[name]}, sizes, command, repeat, load
        )
        result_files.write(f"delta_{name}", only, markdown(only), out)
    print()
    print(markdown(doc))
    return 0


def document(
    rows: list[Row],
    versions: dict[str, list[str]],
    sizes: list[int],
    command: str,
    repeat: int,
    load: dict | None = None,
) -> dict:
    adaptive = {}
    for name in versions:
        sel = [r for r in rows if r.series == name]
        adaptive[name] = {}
        for mode, predictive in (
            (GammaMode.PAPER, False),
            (GammaMode.TRAFFIC, False),
            (GammaMode.TRAFFIC, True),
        ):
            if AdaptiveChunkSize().initial not in sizes:
                break  # the chooser starts from a size this run did not measure: no replay
            result = replay(sel, sizes, mode, predictive)
            result["checks"] = replay_checks(result)
            adaptive[name][result["mode"]] = result
    summary = summarize(rows)
    return dict(
        command=command,
        repeat=repeat,
        load=load,
        zstd_level=DEFAULT_LEVEL,
        work_dir=WORK_DIR,
        sizes=sizes,
        versions=versions,
        summary=summary,
        adaptive=adaptive,
        targets=targets(summary, adaptive),
        rows=[asdict(r) for r in rows],
    )


if __name__ == "__main__":
    sys.exit(main())
