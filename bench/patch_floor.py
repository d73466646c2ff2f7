"""How fast a patch of a zstd-compressed delta can be at best, beside `rdiff patch` (issue 12).

For the newest pair of releases of each series of bench/delta_bench.py and a few block sizes, it
times, interleaved and best of `--repeat`: `rdiff patch` of rdiff's uncompressed delta, our patch
of our delta, and zstd decompression alone of our delta's body recompressed at levels 1 to 19
(the same bytes, so the same traffic class), and writing the new file's bytes alone. Both are part
of any patch that reads a compressed delta, whatever its loop: on two cores such a patch takes at
least max(decompression, (decompression + write) / 2), the "floor" column. Where the floor is above
`rdiff patch`'s whole run, no patch of a zstd delta, compiled or not, can match rdiff there.

    python bench/patch_floor.py [--series openssl,gevent,typescript,django] [--sizes 512,4096,32768]

Needs `rdiff` and the release tarballs delta_bench.py fetches (it fetches them when missing).
Writes bench/results/patch_floor.json and .md.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import tempfile
import time
from pathlib import Path

import delta_bench
import result_files
import zstandard

from hycloud_core.delta import default_strong_len, delta, patch
from hycloud_core.delta.encoder import DEFAULT_LEVEL
from hycloud_core.delta.signature import compute

LEVELS = (1, 3, 9, 19)


def _seconds(fn) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def _rdiff(*args: str) -> None:
    subprocess.run(["rdiff", "-f", *args], check=True, capture_output=True)


def measure(old: Path, new: Path, block: int, work: Path, repeat: int) -> dict:
    strong = default_strong_len(os.path.getsize(old), block)
    with open(old, "rb") as f:
        sig = compute(f, block, strong).encode()
    ours = work / "ours.delta"
    with open(new, "rb") as f, open(ours, "wb") as out:
        delta(sig, f, out, DEFAULT_LEVEL)
    _rdiff("-b", str(block), "-S", str(strong), "signature", str(old), str(work / "rd.sig"))
    _rdiff("delta", str(work / "rd.sig"), str(new), str(work / "rd.delta"))
    packed = ours.read_bytes()
    body = zstandard.ZstdDecompressor().decompressobj().decompress(packed)
    frames = {lvl: zstandard.ZstdCompressor(level=lvl).compress(body) for lvl in LEVELS}

    def ours_patch() -> None:
        with open(old, "rb") as o, open(ours, "rb") as d, open(work / "ours.out", "wb") as w:
            patch(o, d, w)

    def rd_patch() -> None:
        _rdiff("patch", str(old), str(work / "rd.delta"), str(work / "rd.out"))

    data = new.read_bytes()

    def write_alone() -> None:
        with open(work / "write.out", "wb") as w:
            w.write(data)

    wall = {"rdiff_patch": [], "patch": [], "write": [], **{f"unzstd_{lvl}": [] for lvl in LEVELS}}
    for _ in range(repeat):  # interleaved: every figure sees the same load
        wall["rdiff_patch"].append(_seconds(rd_patch))
        wall["patch"].append(_seconds(ours_patch))
        wall["write"].append(_seconds(write_alone))
        for lvl, frame in frames.items():
            wall[f"unzstd_{lvl}"].append(_seconds(lambda f=frame: zstandard.ZstdDecompressor().decompress(f)))
    if (work / "ours.out").read_bytes() != data:
        raise SystemExit(f"patched output differs from {new.name} (block {block})")
    return {
        "block": block,
        "new_size": os.path.getsize(new),
        "delta_raw": len(body),
        "delta_zstd": {str(lvl): len(frame) for lvl, frame in frames.items()},
        "seconds": {k: min(v) for k, v in wall.items()},
    }


def floor(seconds: dict) -> float:
    """The least wall time of a patch of a zstd delta on two cores: decompression (at its fastest
    level) and the write of the new file, perfectly overlapped, decompression on one thread."""
    unzstd = min(seconds[f"unzstd_{lvl}"] for lvl in LEVELS)
    return max(unzstd, (unzstd + seconds["write"]) / 2)


def markdown(doc: dict) -> str:
    lines = [
        "# Patch floor: zstd decompression alone beside `rdiff patch`",
        "",
        f"Command: `python bench/patch_floor.py --series {','.join(doc['series'])} "
        f"--sizes {','.join(map(str, doc['sizes']))} --repeat {doc['repeat']}`. Wall time, best of "
        f"{doc['repeat']}, interleaved; files in /dev/shm. Load average at start {doc['load'][0]:.1f}, "
        f"at end {doc['load'][1]:.1f} (2 cores). A ratio is rdiff's time over ours (above 1: ours is faster); "
        "`unzstd Ln` is decompressing our delta's body compressed at zstd level n, nothing else.",
        "",
        "| series | block | delta raw MB | rdiff patch ms | our patch ms | patch ratio | "
        + " | ".join(f"unzstd L{lvl} ms" for lvl in LEVELS)
        + " | write alone ms | floor ms | rdiff patch vs floor |",
        "|---|---|---|---|---|---|" + "---|" * len(LEVELS) + "---|---|---|",
    ]
    for name, rows in doc["results"].items():
        for r in rows:
            s = r["seconds"]
            unzstd = [s[f"unzstd_{lvl}"] for lvl in LEVELS]
            lines.append(
                f"| {name} | {r['block']} | {r['delta_raw'] / 1e6:.1f} | {s['rdiff_patch'] * 1e3:.1f} | "
                f"{s['patch'] * 1e3:.1f} | {s['rdiff_patch'] / s['patch']:.2f}x | "
                + " | ".join(f"{u * 1e3:.1f}" for u in unzstd)
                + f" | {s['write'] * 1e3:.1f} | {floor(s) * 1e3:.1f} | {s['rdiff_patch'] / floor(s):.2f}x |"
            )
    lines += ["", "## Reading", "", *doc["reading"], ""]
    return "\n".join(lines)


def reading(doc: dict) -> list[str]:
    rows = [(n, r) for n, rs in doc["results"].items() for r in rs]
    beyond = [(n, r["block"]) for n, r in rows if floor(r["seconds"]) > r["seconds"]["rdiff_patch"]]
    worst = min(rows, key=lambda nr: nr[1]["seconds"]["rdiff_patch"] / nr[1]["seconds"]["patch"])
    return [
        f"- our patch >= rdiff patch at every (series, block): "
        f"{all(r['seconds']['patch'] <= r['seconds']['rdiff_patch'] for _, r in rows)}",
        f"- worst patch ratio: {worst[1]['seconds']['rdiff_patch'] / worst[1]['seconds']['patch']:.2f}x "
        f"({worst[0]}, {worst[1]['block']})",
        f"- (series, block) where the floor is above rdiff's whole patch (no patch of a zstd delta can "
        f"match it there): {len(beyond)} of {len(rows)} {beyond}",
        f"- our patch within 1.5x of the floor at every (series, block): "
        f"{all(r['seconds']['patch'] <= 1.5 * floor(r['seconds']) for _, r in rows)}",
    ]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--series", default="openssl,gevent,typescript,django")
    ap.add_argument("--sizes", default="512,4096,32768")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--out", type=Path, default=result_files.RESULTS)
    args = ap.parse_args()
    series, sizes = args.series.split(","), [int(s) for s in args.sizes.split(",")]
    doc: dict = {"series": series, "sizes": sizes, "repeat": args.repeat, "results": {}}
    load0 = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="patch-floor-", dir=delta_bench.WORK_DIR) as tmp:
        for name in series:
            versions, fetch = delta_bench.SERIES[name]
            old, new = (fetch(v) for v in versions(3)[-2:])
            doc["results"][name] = [measure(old, new, b, Path(tmp), args.repeat) for b in sizes]
            print(
                name,
                [
                    (r["block"], {k: round(v * 1e3, 1) for k, v in r["seconds"].items()})
                    for r in doc["results"][name]
                ],
            )
    doc["load"] = (load0, os.getloadavg()[0])
    doc["reading"] = reading(doc)
    text = markdown(doc)
    result_files.write("patch_floor", doc, text, args.out)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
