"""A developer's working copy through `hycloud mount` beside the same steps on local disk.

The tree is made from installed packages (urllib3 and requests: about 60 small .py files, no
caches). Each step runs in a fresh folder of the target: `tar x` of the tree, `git init`,
`git add .`, `git commit`, `git status`, `cp -r` of the tree back out to local disk, `du -sb`,
and last the time the data takes to be durable (`sync` on disk; unmount, which flushes
everything, on the mount). rclone mount of S3 is a third column when `rclone` is installed.

    .venv/bin/python bench/mount_bench.py [--label after]

Runs against the running local cloud; writes bench/results/mount_bench.{json,md}.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "layers" / "core"), str(ROOT / "client")]

from hycloud.admin import create_user  # noqa: E402
from infra.local import deploy as local  # noqa: E402

HYCLOUD = str(Path(sys.executable).parent / "hycloud")
PACKAGES = ("urllib3", "requests")
STEP_TIMEOUT_S = 900
EXIT_WAIT_S = 120
GIT_ENV = {"GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.org"}
GIT_ENV |= {"GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.org"}


def make_tarball(work: Path) -> tuple[Path, int, int]:
    """A tar of the packages' source files; returns it, its file count and byte count."""
    import importlib

    tar_path, files, size = work / "tree.tar", 0, 0
    with tarfile.open(tar_path, "w") as tar:
        for name in PACKAGES:
            pkg = Path(importlib.import_module(name).__file__ or "").parent
            for path in sorted(pkg.rglob("*")):
                if path.is_file() and "__pycache__" not in path.parts:
                    tar.add(path, arcname=f"tree/{name}/{path.relative_to(pkg)}")
                    files, size = files + 1, size + path.stat().st_size
    return tar_path, files, size


def run(cmd: list[str], cwd: Path) -> None:
    env = {**os.environ, **GIT_ENV}
    subprocess.run(cmd, cwd=cwd, check=True, env=env, stdout=subprocess.DEVNULL, timeout=STEP_TIMEOUT_S)


def scenario(target: Path, tar_path: Path, out: Path, durable: Callable[[], None]) -> dict[str, float]:
    """Seconds per step in a fresh folder under `target`."""
    work = target / f"wc-{uuid.uuid4().hex[:8]}"
    work.mkdir()
    steps: list[tuple[str, Callable[[], None]]] = [
        ("tar x", lambda: run(["tar", "xf", str(tar_path)], work)),
        ("git init", lambda: run(["git", "init", "-q"], work)),
        ("git add .", lambda: run(["git", "add", "."], work)),
        ("git commit", lambda: run(["git", "commit", "-q", "-m", "tree"], work)),
        ("git status", lambda: run(["git", "status", "--porcelain"], work)),
        ("cp -r out", lambda: run(["cp", "-r", str(work / "tree"), str(out)], work)),
        ("du -sb", lambda: run(["du", "-sb", str(work)], work)),
        ("durable (sync / unmount)", durable),
    ]
    times: dict[str, float] = {}
    for name, step in steps:
        t0 = time.perf_counter()
        step()
        times[name] = round(time.perf_counter() - t0, 3)
        print(f"  {name}: {times[name]:.3f} s", flush=True)
    times["total"] = round(sum(times.values()), 3)
    return times


def start_mount(mnt: Path, api_url: str, key: str, log: Path) -> subprocess.Popen:
    env = {**os.environ, "HYCLOUD_ENDPOINT": api_url, "HYCLOUD_API_KEY": key}
    env["HYCLOUD_CONFIG"] = "/nonexistent/config.json"
    with open(log, "wb") as err:
        proc = subprocess.Popen([HYCLOUD, "mount", str(mnt)], env=env, stdout=subprocess.DEVNULL, stderr=err)
    deadline = time.monotonic() + 30
    while not os.path.ismount(mnt):
        if proc.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"mount did not appear: {log.read_text()}")
        time.sleep(0.2)
    return proc


NOTES: list[str] = []


def unmount(mnt: Path, proc: subprocess.Popen) -> None:
    """fusermount3 -u, then the process's exit (it sends what it cached first); a process still
    alive after EXIT_WAIT_S is noted and ended with SIGTERM."""
    subprocess.run(["fusermount3", "-u", str(mnt)], check=True, timeout=60)
    try:
        proc.wait(timeout=EXIT_WAIT_S)
    except subprocess.TimeoutExpired:
        NOTES.append(
            f"The mount process was still alive {EXIT_WAIT_S} s after fusermount3 -u; ended by SIGTERM."
        )
        proc.terminate()
        proc.wait(timeout=STEP_TIMEOUT_S)


def table(results: dict[str, dict[str, float]]) -> str:
    columns = list(results)
    steps = list(next(iter(results.values())))
    lines = ["| step | " + " | ".join(f"{c} s" for c in columns) + " |"]
    lines.append("| --- |" + " ---: |" * len(columns))
    for step in steps:
        lines.append(f"| {step} | " + " | ".join(f"{results[c][step]:.2f}" for c in columns) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--label", default="", help="a note kept with the figures (e.g. before/after)")
    parser.add_argument("--out", default=str(ROOT / "bench" / "results"))
    args = parser.parse_args()
    outputs, _ = local.running_deployment()
    key = create_user(outputs["TableName"], f"bench-{uuid.uuid4().hex[:8]}")
    results: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory(prefix="mount-bench-") as tmp:
        base = Path(tmp)
        tar_path, files, size = make_tarball(base)
        print(f"tree: {files} files, {size} bytes", flush=True)
        (base / "disk").mkdir()
        print("local disk", flush=True)
        results["local disk"] = scenario(
            base / "disk", tar_path, base / "out-disk", lambda: run(["sync"], base)
        )
        mnt = base / "mnt"
        mnt.mkdir()
        proc = start_mount(mnt, outputs["LocalApiUrl"], key, base / "mount.log")
        print("hycloud mount", flush=True)
        try:
            results["hycloud mount"] = scenario(mnt, tar_path, base / "out-mnt", lambda: unmount(mnt, proc))
        finally:
            if proc.poll() is None:
                subprocess.run(["fusermount3", "-u", "-z", str(mnt)], check=False, timeout=60)
                proc.wait(timeout=60)
        rclone = shutil.which("rclone")
        if rclone is None:
            NOTES.append("rclone is not installed here: no rclone mount column.")
        note = " ".join(NOTES)
    text = f"# Mount bench {args.label}\n\nTree: {files} files, {size} bytes ({', '.join(PACKAGES)}).\n\n"
    text += table(results) + "\n\n" + (note + "\n" if note else "")
    print(text)
    doc = {"label": args.label, "files": files, "bytes": size, "seconds": results, "note": note}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    name = "mount_bench" + (f"_{args.label}" if args.label else "")
    (out / f"{name}.json").write_text(json.dumps(doc, indent=2) + "\n")
    (out / f"{name}.md").write_text(text)


if __name__ == "__main__":
    main()
