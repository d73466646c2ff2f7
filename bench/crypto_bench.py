"""Encrypted folders (docs/ENCRYPTION.md): what encryption costs in CPU and on the link.

1. Throughput on one core at the chunk sizes used (64 KiB average, 256 KiB largest): AES-256-GCM
   through `cryptography` into a preallocated buffer (`encrypt_into`, no copy: what a seal does)
   and allocating its output (`encrypt`), the whole chunk seal (sha256 of the plaintext, HKDF,
   padding, AES-256-GCM, sha256 of the object), and FastCDC chunking; beside
   `openssl speed -evp aes-256-gcm -bytes N` (one process) at both sizes on the same machine,
   ratio first. Both count CPU time (openssl speed's default is user time), so other load on the
   shared machine does not count. Rounds interleave; the ratio's median over rounds is given too.
2. Bytes a new release sends: consecutive releases (the typescript and openssl source tars the
   delta benches cached in bench/.cache/delta, or synthetic edits with --synthetic) put into an
   encrypted folder after the old one (in memory: only the bytes are counted), against the
   whole file and against HyCloud's plain version delta (hycloud_core.delta.versioned, the
   `put --base` delta) of the same pair.

Writes bench/results/crypto.{json,md,png}. No cloud needed.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from hycloud.encrypted import EncryptedFolder, MemoryStore, upload
from hycloud.encrypted.counters import Counters
from hycloud_core.crypto import chunking, chunks
from hycloud_core.crypto.keys import FolderKeys, KdfParams
from hycloud_core.delta import versioned

sys.path.insert(0, str(Path(__file__).resolve().parent))
from result_files import write  # noqa: E402

CACHE = Path(__file__).resolve().parent / ".cache" / "delta"
CHUNK = chunking.AVG
MAX_CHUNK = chunking.MAX
SERIES = {"typescript": ["5.8.3", "5.9.2", "5.9.3"], "openssl": ["3.5.2", "3.5.4", "3.5.5"]}


def rate(fn, total_bytes: int, seconds: float) -> float:
    """MB/s of `fn` (which handles `total_bytes` per call) per second of this process's CPU time,
    as `openssl speed` counts by default (user time): other load on the machine is left out."""
    calls, start = 0, time.process_time()
    while time.process_time() - start < seconds:
        fn()
        calls += 1
    return calls * total_bytes / (time.process_time() - start) / 1e6


def openssl_rate(seconds: int, size: int = CHUNK) -> float:
    out = subprocess.run(
        ["openssl", "speed", "-evp", "aes-256-gcm", "-bytes", str(size), "-seconds", str(seconds)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    found = re.search(r"^AES-256-GCM\s+([\d.]+)k", out, re.MULTILINE | re.IGNORECASE)
    if not found:
        raise RuntimeError(f"no aes-256-gcm line in openssl speed output:\n{out}")
    return float(found.group(1)) * 1000 / 1e6


def throughput(rounds: int, seconds: float) -> dict:
    keys = FolderKeys.derive(os.urandom(16), os.urandom(32))
    pieces = [os.urandom(CHUNK) for _ in range(64)]
    blob = b"".join(pieces) * 4  # 16 MiB for the chunker
    gcm, nonce = AESGCM(os.urandom(32)), os.urandom(12)
    text = [
        b"".join(b"line %d of some source file, more or less\n" % (i * j) for i in range(1500))[:CHUNK]
        for j in range(64)
    ]
    into = memoryview(bytearray(CHUNK + 16))  # one preallocated output each, as chunks.seal has
    into_max = memoryview(bytearray(MAX_CHUNK + 16))
    big = [os.urandom(MAX_CHUNK) for _ in range(16)]  # the largest chunk FastCDC cuts: 256 KiB
    names = ("seal", "seal_text", "aes_gcm", "aes_gcm_into", "aes_gcm_into_max", "sha256", "fastcdc")
    runs: dict[str, list[float]] = {k: [] for k in (*names, "openssl", "openssl_max")}
    for _ in range(rounds):
        runs["openssl"].append(openssl_rate(max(1, round(seconds))))
        runs["openssl_max"].append(openssl_rate(max(1, round(seconds)), MAX_CHUNK))
        runs["aes_gcm_into"].append(
            rate(lambda: [gcm.encrypt_into(nonce, p, None, into) for p in pieces], CHUNK * 64, seconds)
        )
        runs["aes_gcm_into_max"].append(
            rate(lambda: [gcm.encrypt_into(nonce, p, None, into_max) for p in big], MAX_CHUNK * 16, seconds)
        )
        runs["seal"].append(
            rate(lambda: [chunks.seal(keys, p) for p in pieces], CHUNK * len(pieces), seconds)
        )
        runs["seal_text"].append(
            rate(lambda: [chunks.seal(keys, p) for p in text], CHUNK * len(text), seconds)
        )
        runs["sha256"].append(rate(lambda: [hashlib.sha256(p).digest() for p in pieces], CHUNK * 64, seconds))
        runs["aes_gcm"].append(
            rate(lambda: [gcm.encrypt(nonce, p, None) for p in pieces], CHUNK * 64, seconds)
        )
        runs["fastcdc"].append(rate(lambda: chunking.boundaries(blob), len(blob), seconds))
    best = {k: max(v) for k, v in runs.items()}
    return {
        "chunk_bytes": CHUNK,
        "runs_mb_s": runs,
        "best_mb_s": best,
        "median_mb_s": {k: statistics.median(v) for k, v in runs.items()},
        "ratio_seal_to_openssl": best["seal"] / best["openssl"],
        "ratio_aes_gcm_to_openssl": best["aes_gcm"] / best["openssl"],
        "ratio_aes_gcm_into_to_openssl": best["aes_gcm_into"] / best["openssl"],
        "ratio_aes_gcm_into_max_to_openssl_max": best["aes_gcm_into_max"] / best["openssl_max"],
        "median_ratio_aes_gcm_into_to_openssl": statistics.median(
            a / b for a, b in zip(runs["aes_gcm_into"], runs["openssl"], strict=True)
        ),
    }


def plain_delta(old: Path, new: Path) -> int:
    with old.open("rb") as base, new.open("rb") as fresh:
        return versioned.encode(base, old.stat().st_size, fresh, new.stat().st_size, io.BytesIO())


def encrypted_sent(old: Path, new: Path) -> dict:
    folder = EncryptedFolder.create(MemoryStore(), "bench", b"bench", KdfParams(n=2**10), Counters())
    first = upload.put_file(folder, old, "release.tar")
    start = time.perf_counter()
    second = upload.put_file(folder, new, "release.tar")
    return {
        "first_bytes": first.bytes_sent,
        "bytes": second.bytes_sent,
        "chunks_sent": second.chunks_sent,
        "chunks_reused": second.chunks_reused,
        "put_s": time.perf_counter() - start,
    }


def synthetic(work: Path) -> dict[str, list[Path]]:
    """A 24 MiB file and two later versions with scattered small edits (inserts and overwrites)."""
    rng, data, files = random.Random(7), bytearray(random.Random(1).randbytes(24 * 2**20)), []
    for version in range(3):
        path = work / f"synthetic-{version}.bin"
        path.write_bytes(bytes(data))
        files.append(path)
        for _ in range(20):
            at = rng.randrange(len(data))
            data[at:at] = rng.randbytes(rng.randrange(1, 200))
    return {"synthetic": files}


def releases() -> dict[str, list[Path]]:
    found = {}
    for series, versions in SERIES.items():
        paths = [CACHE / series / f"{series}-{v}.tar" for v in versions]
        if all(p.exists() for p in paths):
            found[series] = paths
    return found


def transfer_rows(series: dict[str, list[Path]]) -> list[dict]:
    rows = []
    for name, files in series.items():
        for old, new in zip(files, files[1:], strict=False):
            enc = encrypted_sent(old, new)
            rows.append(
                {
                    "series": name,
                    "pair": f"{old.stem}→{new.stem}",
                    "size": new.stat().st_size,
                    "plain_delta": plain_delta(old, new),
                    **{f"enc_{k}": v for k, v in enc.items()},
                }
            )
    return rows


def report(doc: dict) -> str:
    t = doc["throughput"]
    best, med = t["best_mb_s"], t["median_mb_s"]
    lines = [
        "# Encrypted folders: CPU and link cost",
        "",
        f"Machine load average at start / end: {doc['load']}. One core, MB/s per second of CPU time "
        f"(as openssl speed counts), best of {len(t['runs_mb_s']['seal'])} interleaved rounds (medians beside).",
        "",
        f"Ratio first: AES-256-GCM (cryptography, `encrypt_into` a preallocated buffer, as a seal "
        f"does) / openssl = **{t['ratio_aes_gcm_into_to_openssl']:.2f}x** at {CHUNK // 1024} KiB "
        f"(median of the rounds' ratios {t['median_ratio_aes_gcm_into_to_openssl']:.2f}x), "
        f"**{t['ratio_aes_gcm_into_max_to_openssl_max']:.2f}x** at {MAX_CHUNK // 1024} KiB; "
        f"`encrypt` (a new bytes object each call) {t['ratio_aes_gcm_to_openssl']:.2f}x; "
        f"whole chunk seal / openssl = {t['ratio_seal_to_openssl']:.2f}x.",
        "",
        "| step, 64 KiB chunks unless said | best MB/s | median MB/s |",
        "| --- | ---: | ---: |",
    ]
    labels = {
        "openssl": "openssl speed -evp aes-256-gcm -bytes 65536",
        "aes_gcm_into": "AES-256-GCM, cryptography `encrypt_into` (preallocated output)",
        "aes_gcm": "AES-256-GCM, cryptography `encrypt` (allocates its output)",
        "openssl_max": "openssl speed -evp aes-256-gcm -bytes 262144",
        "aes_gcm_into_max": "AES-256-GCM `encrypt_into`, 256 KiB (the largest chunk)",
        "seal": "chunk seal, random data: sha256 + zstd sample + HKDF + pad + AES-GCM + sha256",
        "seal_text": "chunk seal, source text (compressed 64 KiB -> a few KiB before AES-GCM)",
        "sha256": "sha256 (hashlib), twice per chunk in a seal",
        "fastcdc": "FastCDC chunking (fastcdc, compiled)",
    }
    for key, label in labels.items():
        lines.append(f"| {label} | {best[key]:.0f} | {med[key]:.0f} |")
    lines += [
        "",
        "## Bytes a new release sends",
        "",
        "Encrypted: chunks the folder lacks (zstd level 1 before sealing, where it pays) + the "
        "file's manifest + its folder's name map. Plain delta: HyCloud's version delta "
        "(zstd patch-from, `put --base`) of the same pair, computed in-process.",
        "",
        "| series | pair | MB | plain full KB | plain delta KB | encrypted KB | encrypted / plain delta | chunks sent / reused |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in doc["transfer"]:
        lines.append(
            f"| {r['series']} | {r['pair']} | {r['size'] / 1e6:.1f} | {r['size'] / 1000:.0f} | "
            f"{r['plain_delta'] / 1000:.0f} | {r['enc_bytes'] / 1000:.0f} | "
            f"{r['enc_bytes'] / max(r['plain_delta'], 1):.1f}x | {r['enc_chunks_sent']} / {r['enc_chunks_reused']} |"
        )
    lines += ["", *doc.get("notes", [])]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument(
        "--synthetic", action="store_true", help="synthetic edits even when releases are cached"
    )
    parser.add_argument("--note", action="append", default=[], help="a line added to the report")
    args = parser.parse_args()
    load_start = " ".join(f"{x:.2f}" for x in os.getloadavg())
    doc: dict = {"throughput": throughput(args.rounds, args.seconds)}
    with tempfile.TemporaryDirectory() as tmp:
        series = releases()
        if args.synthetic or not series:
            series = {**series, **synthetic(Path(tmp))}
        doc["transfer"] = transfer_rows(series)
    doc["load"] = f"{load_start} / {' '.join(f'{x:.2f}' for x in os.getloadavg())}"
    doc["notes"] = args.note
    text = report(doc)
    write("crypto", doc, text)
    print(text)


if __name__ == "__main__":
    main()
