"""Erasure-coding throughput: plain zfec beside the framed path, plus ring placement time.

RS(5,3) on 2 MiB chunks (the default code for five service instances and the
default chunk size S̄_f). "plain" is zfec alone on pre-split buffers; "framed"
is what HyCloud runs: split and pad, encode, frame each block with its header
and xxh3-128 hash (encode); parse, verify every hash, decode, strip padding and
check the chunk digest (decode). Decoding is measured from the k primary
blocks and from a mixed subset that needs parity (blocks 0, 3, 4).

Run:  python bench/erasure_bench.py [--trials 7] [--reps 20]
Writes bench/results/erasure.json and bench/results/erasure.md.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import zfec

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "layers" / "core"))

import result_files  # noqa: E402

from hycloud_core.codec.erasure import decode_chunk, encode_chunk, encode_stream  # noqa: E402
from hycloud_core.placement.ring import HashRing  # noqa: E402

N, K = 5, 3
CHUNK = 2 * 1024 * 1024
MIXED = (0, 3, 4)
REGIONS = [
    "us-east-1",
    "us-west-2",
    "eu-west-1",
    "eu-central-1",
    "ap-southeast-1",
    "ap-northeast-1",
    "sa-east-1",
    "ca-central-1",
]


def timed(fn: Callable[[], object], reps: int, trials: int) -> list[float]:
    """Seconds per call for each trial (each trial runs `reps` calls)."""
    out = []
    for _ in range(trials):
        start = time.perf_counter()
        for _ in range(reps):
            fn()
        out.append((time.perf_counter() - start) / reps)
    return out


def interleaved(cases: dict[str, Callable[[], object]], reps: int, trials: int) -> dict[str, list[float]]:
    """Trials taken round-robin over the cases, so load swings on a shared machine hit all of them alike."""
    out: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(trials):
        for name, fn in cases.items():
            out[name] += timed(fn, reps, 1)
    return out


def mbps(seconds: list[float], nbytes: int = CHUNK) -> dict[str, float]:
    rates = [nbytes / s / 1e6 for s in seconds]
    return {"median_MBps": round(statistics.median(rates), 1), "best_MBps": round(max(rates), 1)}


def coding_cases(data: bytes) -> dict[str, Callable[[], object]]:
    size = -(-len(data) // K)
    parts = tuple(data[i * size : (i + 1) * size].ljust(size, b"\0") for i in range(K))
    enc, dec = zfec.Encoder(K, N), zfec.Decoder(K, N)
    raw = enc.encode(parts)
    framed = encode_chunk(data, 0, N, K)
    assert decode_chunk([framed[i] for i in MIXED]) == data

    def plain_decode(idx: tuple[int, ...]) -> Callable[[], object]:
        blocks, nums = tuple(raw[i] for i in idx), idx
        return lambda: b"".join(dec.decode(blocks, nums))[: len(data)]

    return {
        "encode plain zfec": lambda: enc.encode(parts),
        "encode framed": lambda: encode_chunk(data, 0, N, K),
        "decode primary plain zfec": plain_decode((0, 1, 2)),
        "decode primary framed": lambda: decode_chunk(framed[:K]),
        "decode mixed plain zfec": plain_decode(MIXED),
        "decode mixed framed": lambda: decode_chunk([framed[i] for i in MIXED]),
    }


def stream_case(trials: int) -> dict[str, float]:
    """Whole-file encode through encode_stream (adds sha256 chunk keys), 32 MiB."""
    payload = os.urandom(16 * CHUNK)
    seconds = timed(lambda: sum(1 for _ in encode_stream(io.BytesIO(payload), N, K, CHUNK)), 1, trials)
    return mbps(seconds, len(payload))


def ring_cases(trials: int) -> dict[str, dict[str, float]]:
    keys = [hashlib.sha256(i.to_bytes(4, "big")).hexdigest() for i in range(20000)]
    out = {}
    for size, n in ((3, 3), (5, 5), (8, 5)):
        ring = HashRing(REGIONS[:size])
        for k in keys:  # warm the per-point order memo, as a long-lived process would
            ring.place(k, n)
        per_call = timed(lambda ring=ring, n=n: [ring.place(k, n) for k in keys], 1, trials)
        build = timed(lambda size=size: HashRing(REGIONS[:size]), 5, trials)
        out[f"N={size} n={n}"] = {
            "place_us": round(statistics.median(per_call) / len(keys) * 1e6, 2),
            "build_ms": round(statistics.median(build) * 1e3, 2),
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trials", type=int, default=7)
    parser.add_argument("--reps", type=int, default=20)
    args = parser.parse_args()

    data = os.urandom(CHUNK)
    coding = {
        name: mbps(secs) for name, secs in interleaved(coding_cases(data), args.reps, args.trials).items()
    }
    result = {
        "code": f"RS({N},{K})",
        "chunk_bytes": CHUNK,
        "trials": args.trials,
        "reps": args.reps,
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(), "zfec": zfec.__version__},
        "coding": coding,
        "encode_stream_32MiB": stream_case(args.trials),
        "ring": ring_cases(args.trials),
    }
    for name, r in coding.items():
        print(f"{name:28s} {r['median_MBps']:9.1f} MB/s median  {r['best_MBps']:9.1f} best")
    print(
        f"{'encode_stream (sha256 keys)':28s} {result['encode_stream_32MiB']['median_MBps']:9.1f} MB/s median"
    )
    for name, r in result["ring"].items():
        print(f"ring {name:12s} place {r['place_us']:6.2f} us   build {r['build_ms']:6.2f} ms")

    result_files.write("erasure", result, markdown(result))


def markdown(r: dict) -> str:
    rows = [
        f"# Erasure coding: {r['code']} on {r['chunk_bytes'] // 2**20} MiB chunks",
        "",
        f"{r['trials']} trials x {r['reps']} chunks, median (best) MB/s of chunk data; "
        "cases interleaved trial by trial; 2-core machine shared with other work, so figures are noisy.",
        "",
        *result_files.table(
            ["operation", "plain zfec", "framed (header + xxh3-128 + verify)", "framed / plain"],
            "lrrr",
            (_coding_cells(op, r["coding"]) for op in ("encode", "decode primary", "decode mixed")),
        ),
        "",
        f"Whole-file `encode_stream` (adds a sha256 content key per chunk): "
        f"{r['encode_stream_32MiB']['median_MBps']} MB/s median.",
        "",
        *result_files.table(
            ["ring", "place() per chunk", "build"],
            "lrr",
            ([name, f"{v['place_us']} us", f"{v['build_ms']} ms"] for name, v in r["ring"].items()),
        ),
    ]
    return "\n".join(rows) + "\n"


def _coding_cells(op: str, coding: dict) -> list[str]:
    """Median (best) MB/s of plain zfec and of framed chunks, and what the framing costs."""
    plain, framed = coding[f"{op} plain zfec"], coding[f"{op} framed"]
    return [
        op,
        f"{plain['median_MBps']} ({plain['best_MBps']})",
        f"{framed['median_MBps']} ({framed['best_MBps']})",
        f"{framed['median_MBps'] / plain['median_MBps']:.2f}",
    ]


if __name__ == "__main__":
    main()
