"""`snapshot create` on the local deployment, by tree size, beside HyCloud's own tree copy
(`cp -r` through the API) and a local disk's `cp -r` and `cp -al` (a hard-link tree, as
rsnapshot makes: the strongest metadata-only peer), and the snapshot restore that copies it back.

For each size a tree of N small files (100 B, 10 per folder) is uploaded in bundles, then timed:
- answer: the create request, the snapshot's moment (its lease on the folder; a small tree is
  copied within it, a larger one by its job, copy-on-write: fs/snapshot_copy.py);
- a write while it is made: an overwrite in the tree's last folder just after the answer (it
  copies that folder into the snapshot first, if the job has not yet);
- ready: until the job has copied the tree (the snapshot is browsable);
- restore (to another folder; up to 2,500 entries, the limit of one restore request) and HyCloud
  `cp` of the folder (up to 1,000 files: a larger copy is a tree job of its own);
- on a local temporary folder, `cp -r` and `cp -al` of the same tree.

    .venv/bin/python bench/snapshot_bench.py [--sizes 1,100,1000,10000]

Needs the local cloud deployed; writes bench/results/snapshots.json and snapshots.md.
"""

from __future__ import annotations

import subprocess
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "layers" / "core"), str(ROOT / "client")]
from trash_bench import make_tree, ms, sized_main  # noqa: E402

from hycloud.sdk import HyCloud  # noqa: E402
from hycloud.sdk.bundles import put_files  # noqa: E402


def row(hc: HyCloud, work: Path, files: int) -> dict:
    local_tree = work / f"tree{files}"
    made = make_tree(local_tree, files)
    remote = f"/snap-bench-{uuid.uuid4().hex[:6]}"
    results = put_files(hc, [(p, f"{remote}/{p.relative_to(local_tree).as_posix()}") for p in made])
    assert all(r["status"] == "ok" for r in results), [r for r in results if r["status"] != "ok"][:3]
    name, last = f"b-{uuid.uuid4().hex[:8]}", f"{remote}/d{(files - 1) // 10}/f{files - 1}.txt"
    t0 = time.perf_counter()
    answer = hc.http.json("POST", "/v1/snapshots", json={"path": remote, "name": name})
    answer_ms = (time.perf_counter() - t0) * 1000
    write_ms = ms(lambda: hc.put_bytes(last, b"x" * 100))
    snap = answer["snapshot"]
    while snap["state"] != "ready":
        time.sleep(0.05)
        snap = hc.snapshots.get(name)
    ready_ms = (time.perf_counter() - t0) * 1000
    assert snap["files"] == files and len(hc.snapshots.get_bytes(name, last[len(remote) :])) == 100, snap
    restore_ms = cp_ms = None
    if files <= 2_500:
        restore_ms = ms(lambda: hc.snapshots.restore(name, to=f"{remote}-restored"))
        assert hc.stat(f"{remote}-restored/d0/f0.txt")["size"] == 100
        hc.rmdir(f"{remote}-restored", recursive=True)
    if files <= 1_000:
        cp_ms = ms(lambda: hc.cp(remote, f"{remote}-copy"))
        hc.rmdir(f"{remote}-copy", recursive=True)
    hc.rmdir(remote, recursive=True)
    hc.snapshots.rm(name)
    # the trees stay in the bench user's trash: emptying them is the trash's cost, not this one's
    local_cp_ms = ms(lambda: subprocess.run(["cp", "-r", local_tree, work / f"cp{files}"], check=True))
    local_cpal_ms = ms(lambda: subprocess.run(["cp", "-al", local_tree, work / f"al{files}"], check=True))
    return {
        "files": files,
        "hycloud_snapshot_answer_ms": answer_ms,
        "hycloud_write_while_made_ms": write_ms,
        "hycloud_snapshot_ready_ms": ready_ms,
        "hycloud_snapshot_restore_ms": restore_ms,
        "hycloud_cp_r_ms": cp_ms,
        "local_cp_r_ms": local_cp_ms,
        "local_cp_al_ms": local_cpal_ms,
    }


COLUMNS = [
    ("snapshot create: answer ms", "hycloud_snapshot_answer_ms", ".0f"),
    ("a write while made ms", "hycloud_write_while_made_ms", ".0f"),
    ("snapshot ready ms", "hycloud_snapshot_ready_ms", ".0f"),
    ("snapshot restore ms", "hycloud_snapshot_restore_ms", ".0f"),
    ("HyCloud cp -r ms", "hycloud_cp_r_ms", ".0f"),
    ("local cp -r ms", "local_cp_r_ms", ".1f"),
    ("local cp -al ms", "local_cp_al_ms", ".1f"),
]

if __name__ == "__main__":
    sized_main("snapshots", row, COLUMNS)
