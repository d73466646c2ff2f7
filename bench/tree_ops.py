"""Tree operations for bench/fs_bench.py --trees: `mv` and `rm -r` (into the trash) of whole
trees through the API, beside the same on a local directory and S3's copy + delete per object.

Trees: one file, 1,000, 10,000 and 100,000 files (100 per folder, folders 10 to a parent), and a
chain of 20 folders with a file at the bottom. Each tree is uploaded once (bundles), then moved
back and forth, copied (`cp -r`, the copy removed untimed) and removed into the trash (restored
between removals, untimed); the local peer renames, copies (`shutil.copytree`) and removes
(`shutil.rmtree`) a tree of the same shape in a temp dir. After each upload the bench waits for
the machine's load to settle (at most QUIET_WAIT_S); `mv` and `rm -r` are the medians of
`repeat` runs; the S3 peer copies every object of a
prefix (16 threads: `cp -r`), deletes each original (with the copy, the strongest plain-S3
"rename") and deletes a prefix in 1,000-key batches (`rm -r`).

Above COPY_UP_TO files the copies are not run (a copy writes every file: 100,000 of them take
minutes on either side, linear in the tree, as the 10,000-file rows show), nor the S3 peer above
S3_UP_TO (100,000 copies and deletes one object at a time).
"""

from __future__ import annotations

import os
import shutil
import statistics
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import Any

from hycloud.sdk import HyCloud, bundles

PER_FOLDER = 100
QUIET_LOAD, QUIET_WAIT_S = 1.5, 180.0


def shape(files: int, chain: int = 0) -> list[str]:
    """Relative paths of a tree's files."""
    if chain:
        return ["/".join(f"l{i}" for i in range(chain)) + "/leaf.txt"]
    if files == 1:
        return ["only.txt"]
    return [f"g{i // (PER_FOLDER * 10)}/d{i // PER_FOLDER}/f{i}.txt" for i in range(files)]


def _ms(fn: Callable[[], Any]) -> float:
    t0 = time.perf_counter()
    fn()
    return (time.perf_counter() - t0) * 1000


def quiet(load: float = QUIET_LOAD, wait_s: float = QUIET_WAIT_S) -> None:
    """Wait (at most `wait_s`) for the machine to settle after an upload: a 100,000-file upload
    leaves the 1-minute load at 10 and more, which the next figures would carry."""
    deadline = time.monotonic() + wait_s
    while os.getloadavg()[0] > load and time.monotonic() < deadline:
        time.sleep(5)


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def hycloud_row(hc: HyCloud, work: Path, label: str, rels: list[str], repeat: int) -> dict[str, float]:
    local = work / "src"
    shutil.rmtree(local, ignore_errors=True)
    for rel in rels:
        (local / rel).parent.mkdir(parents=True, exist_ok=True)
        (local / rel).write_bytes(b"x" * 64)
    root = f"/trees/{label}"
    hc.mkdir("/trees", parents=True)
    t0 = time.perf_counter()
    results = bundles.put_files(hc, [(local / rel, f"{root}/a/{rel}") for rel in rels], parallel=8)
    bundles.raise_first_error(results)
    upload_s = time.perf_counter() - t0
    quiet()
    moves = []
    for i in range(repeat):
        src, dst = (f"{root}/a", f"{root}/b") if i % 2 == 0 else (f"{root}/b", f"{root}/a")
        moves.append(_ms(partial(hc.mv, src, dst)))
    where = f"{root}/a" if repeat % 2 == 0 else f"{root}/b"
    copy_ms = float("nan")
    if len(rels) <= COPY_UP_TO:
        copy_ms = _ms(partial(hc.cp, where, f"{root}/c"))
        hc.rmdir(f"{root}/c", recursive=True)
    removals = []
    for i in range(repeat):  # a restore brings the folder's entry back: O(depth)
        if i:
            item = hc.trash()["items"][0]["item"]
            hc.trash_restore(item)
        removals.append(_ms(lambda: hc.rmdir(where, recursive=True)))
    return {
        "upload_s": upload_s,
        "hycloud_mv_ms": _median(moves),
        "hycloud_cp_r_ms": copy_ms,
        "hycloud_rm_r_ms": _median(removals),
    }


def local_row(work: Path, rels: list[str], repeat: int) -> dict[str, float]:
    base = work / "local"
    shutil.rmtree(base, ignore_errors=True)
    for rel in rels:
        (base / "a" / rel).parent.mkdir(parents=True, exist_ok=True)
        (base / "a" / rel).write_bytes(b"x" * 64)
    moves = []
    for i in range(repeat):
        src, dst = (base / "a", base / "b") if i % 2 == 0 else (base / "b", base / "a")
        moves.append(_ms(partial(os.rename, src, dst)))
    where = base / ("a" if repeat % 2 == 0 else "b")
    copy_ms = _ms(partial(shutil.copytree, where, base / "c")) if len(rels) <= COPY_UP_TO else float("nan")
    return {
        "local_mv_ms": _median(moves),
        "local_cp_r_ms": copy_ms,
        "local_rm_r_ms": _ms(lambda: shutil.rmtree(where)),
    }


def s3_row(s3: Any, bucket: str, label: str, rels: list[str]) -> dict[str, float]:
    pool = ThreadPoolExecutor(16)
    src = [f"{label}/a/{rel}" for rel in rels]
    list(pool.map(lambda key: s3.put_object(Bucket=bucket, Key=key, Body=b"x" * 64), src))

    def copy() -> None:
        def one(key: str) -> None:
            new = key.replace(f"{label}/a/", f"{label}/b/", 1)
            s3.copy_object(Bucket=bucket, Key=new, CopySource={"Bucket": bucket, "Key": key})

        list(pool.map(one, src))

    def delete_each() -> None:
        list(pool.map(lambda key: s3.delete_object(Bucket=bucket, Key=key), src))

    def remove() -> None:
        moved = [k.replace(f"{label}/a/", f"{label}/b/", 1) for k in src]
        for i in range(0, len(moved), 1000):
            s3.delete_objects(Bucket=bucket, Delete={"Objects": [{"Key": k} for k in moved[i : i + 1000]]})

    copied = _ms(copy)
    row = {"s3_cp_r_ms": copied, "s3_mv_ms": copied + _ms(delete_each), "s3_rm_r_ms": _ms(remove)}
    pool.shutdown()
    return row


TREES = {
    "1 file": (1, 0),
    "1,000 files": (1000, 0),
    "10,000 files": (10_000, 0),
    "100,000 files": (100_000, 0),
    "20-deep chain": (1, 20),
}
COPY_UP_TO = 10_000
S3_UP_TO = 10_000
NOT_RUN = {"s3_cp_r_ms": float("nan"), "s3_mv_ms": float("nan"), "s3_rm_r_ms": float("nan")}


def tree_rows(hc: HyCloud, s3: Any, bucket: str, work: Path, repeat: int, only: list[str]) -> list[dict]:
    rows = []
    for label, (files, chain) in TREES.items():
        if only and label not in only:
            continue
        rels = shape(files, chain)
        slug = label.replace(" ", "").replace(",", "")
        row = {"tree": label, "files": len(rels)}
        row |= hycloud_row(hc, work, slug, rels, repeat)
        row |= local_row(work, rels, repeat)
        row |= s3_row(s3, bucket, slug, rels) if len(rels) <= S3_UP_TO else NOT_RUN
        rows.append(row)
        print(row, flush=True)
    return rows


def _cell(value: float, digits: int = 0) -> str:
    return "not run" if value != value else f"{value:,.{digits}f}"


def tree_table(rows: list[dict]) -> str:
    """mv, cp -r and rm -r side by side, and HyCloud's time over its 1-file tree's (aim: within 3x)."""
    one = next((r for r in rows if r["files"] == 1 and r["tree"] == "1 file"), None)
    lines = [
        "| tree | files | HyCloud mv ms | x 1-file | local mv ms | S3 copy+delete ms | HyCloud cp -r ms | "
        "local cp -r ms | S3 copy ms | HyCloud rm -r ms | x 1-file | local rm -r ms | S3 delete ms |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in rows:
        mv_x = r["hycloud_mv_ms"] / one["hycloud_mv_ms"] if one else float("nan")
        rm_x = r["hycloud_rm_r_ms"] / one["hycloud_rm_r_ms"] if one else float("nan")
        lines.append(
            f"| {r['tree']} | {r['files']:,} | {_cell(r['hycloud_mv_ms'])} | {_cell(mv_x, 1)} | "
            f"{_cell(r['local_mv_ms'], 2)} | {_cell(r['s3_mv_ms'])} | {_cell(r.get('hycloud_cp_r_ms', float('nan')))} | "
            f"{_cell(r.get('local_cp_r_ms', float('nan')), 1)} | {_cell(r.get('s3_cp_r_ms', float('nan')))} | "
            f"{_cell(r['hycloud_rm_r_ms'])} | {_cell(rm_x, 1)} | {_cell(r['local_rm_r_ms'], 1)} | {_cell(r['s3_rm_r_ms'])} |"
        )
    return "\n".join(lines) + "\n"
