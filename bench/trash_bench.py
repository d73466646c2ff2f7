"""`rm -r` into the trash on the local deployment, by tree size, beside a local disk's `rm -r` and
`mv` of the same tree (the strongest peer: one rename), and the trash restore that undoes it.

For each size a tree of N small files (100 B, 10 per folder) is uploaded in bundles, then timed:
HyCloud `rmdir(recursive=True)` (the API answer: one EFS rename, one folder entry and one Merkle
tombstone; what it held counted for 0.1 s at most, a larger tree's left pending), HyCloud
`trash_restore` (the rename back and the folder's entry with all below it), and on a local temporary folder the same tree's `mv` into a trash folder and `rm -r`; then HyCloud's `trash empty` of
the tree: the API's answer (the item claimed; a tree of more than 200 files left to the emptying
job) and the time until all of it is removed (the job followed to its end).

    .venv/bin/python bench/trash_bench.py [--sizes 1,100,1000]

Needs the local cloud deployed; writes bench/results/trash.json and trash.md.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "layers" / "core"), str(ROOT / "client")]
import result_files  # noqa: E402

from hycloud.admin import create_user  # noqa: E402
from hycloud.sdk import HyCloud, tree_jobs  # noqa: E402
from hycloud.sdk.bundles import put_files  # noqa: E402
from infra.local import deploy as local  # noqa: E402


def make_tree(root: Path, files: int) -> list[Path]:
    made = []
    for i in range(files):
        path = root / f"d{i // 10}" / f"f{i}.txt"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(os.urandom(50).hex().encode())
        made.append(path)
    return made


def ms(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return (time.perf_counter() - t0) * 1000


def row(hc: HyCloud, work: Path, files: int) -> dict:
    local_tree = work / f"tree{files}"
    made = make_tree(local_tree, files)
    remote = f"/trash-bench-{uuid.uuid4().hex[:6]}"
    results = put_files(hc, [(p, f"{remote}/{p.relative_to(local_tree).as_posix()}") for p in made])
    assert all(r["status"] == "ok" for r in results), [r for r in results if r["status"] != "ok"][:3]
    answer: dict = {}
    rm_ms = ms(lambda: answer.update(hc.rmdir(remote, recursive=True)))
    assert answer["trash"]["pending"] or answer["trash"]["files"] == files, answer  # pending: counted later
    restore_ms = ms(lambda: hc.trash_restore(answer["trash"]["item"]))
    assert hc.stat(f"{remote}/d0/f0.txt")["size"] == 100
    item = hc.rmdir(remote, recursive=True)["trash"]["item"]
    hc.trash()  # counted by the listing, as a user's `trash ls` before emptying does
    emptied: dict = {}
    t0 = time.perf_counter()
    empty_ms = ms(lambda: emptied.update(hc.http.json("POST", "/v1/trash/empty", json={"item": item})))
    if "job" in emptied:  # more files than run inline: removed by the emptying job
        tree_jobs.follow(hc.http, emptied["job"])
    emptied_s = time.perf_counter() - t0
    assert emptied["emptied"] == [item] and hc.trash()["items"] == [], emptied
    copy = work / f"copy{files}"
    shutil.copytree(local_tree, copy)
    (work / "trash").mkdir(exist_ok=True)
    local_mv_ms = ms(lambda: os.rename(copy, work / "trash" / copy.name))
    local_rm_ms = ms(lambda: shutil.rmtree(work / "trash" / copy.name))
    return {
        "files": files,
        "hycloud_rm_r_ms": rm_ms,
        "hycloud_restore_ms": restore_ms,
        "local_mv_ms": local_mv_ms,
        "local_rm_r_ms": local_rm_ms,
        "hycloud_empty_ms": empty_ms,
        "hycloud_emptied_s": emptied_s,
    }


Column = tuple[str, str, str]  # header, the row's key, format


def _cell(value: float | None, spec: str) -> str:
    return "—" if value is None else format(value, spec)


def sized_main(name: str, row_of: Callable[[HyCloud, Path, int], dict], columns: list[Column]) -> None:
    """Run `row_of` for each of --sizes on a new bench user of the local deployment; print and
    write bench/results/<name>.json and .md (trash_bench.py and snapshot_bench.py)."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="1,100,1000")
    args = parser.parse_args()
    outputs, _env = local.running_deployment()
    hc = HyCloud(outputs["LocalApiUrl"], create_user(outputs["TableName"], f"bench-{uuid.uuid4().hex[:8]}"))
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for files in (int(s) for s in args.sizes.split(",")):
            rows.append(row_of(hc, Path(tmp), files))
            print(rows[-1], flush=True)
    lines = [
        "| files | " + " | ".join(h for h, _, _ in columns) + " |",
        "| ---: |" + " ---: |" * len(columns),
    ]
    lines += [f"| {r['files']} | " + " | ".join(_cell(r[k], f) for _, k, f in columns) + " |" for r in rows]
    result_files.write(name, {"rows": rows}, "\n".join(lines) + "\n")
    print("\n".join(lines))


COLUMNS = [
    ("HyCloud rm -r (to trash) ms", "hycloud_rm_r_ms", ".0f"),
    ("HyCloud trash restore ms", "hycloud_restore_ms", ".0f"),
    ("local mv ms", "local_mv_ms", ".2f"),
    ("local rm -r ms", "local_rm_r_ms", ".1f"),
    ("HyCloud trash empty: answer ms", "hycloud_empty_ms", ".0f"),
    ("all removed s", "hycloud_emptied_s", ".2f"),
]

if __name__ == "__main__":
    sized_main("trash", row, COLUMNS)
