"""A developer's working copy through `hycloud mount`, beside `rclone mount` of an S3 bucket in the
same local cloud and the same steps on local disk.

The tree is made from installed packages (urllib3 and requests: about 60 small .py files, no
caches), and a local git repository of it is made before timing. Each step runs in a fresh folder
of the target: `git clone` of that repository, `tar x` of the tree, `git init`, `git add .`,
`git commit`, `git status`, `tar x` of 3,000 small files (`--small-files`), `cp -r` of the tree
back out to local disk, `du -sb`, and last the time the data takes to be durable: `sync` on disk;
unmount, which sends everything, on the hycloud mounts (the standard one and `--native`, the
compiled daemon of client/native); for rclone, until the bucket holds every
file of the folder (rclone sends closed files after its --vfs-write-back of 5 s), then unmount.
Each column's first step waits (30 s at most) for the machine to be quiet: not for the mount's own
start-up, nor for the local cloud, on the same CPUs, still taking in the column before's files.
rclone runs with `--vfs-cache-mode writes`, which git needs (its default, off, cannot write
git's files), and its other defaults; it is built on first use (bench/rclone_tool.py).

    .venv/bin/python bench/mount_bench.py [--label after] [--small-files 3000] [--no-rclone]
        [--runs 3] [--baseline DIR] [--profile FILE] [--no-native]

Runs against the running local cloud; writes bench/results/mount_bench[_LABEL].{json,md}. With
`--runs` every column runs that often, in turn, and the table shows medians, the mounts' ratios
to local disk first. `--baseline DIR` adds a column of another checkout's mount (DIR holds its
client/ and layers/core/) under the same load; `--profile FILE` counts the hycloud mount's FUSE
operations and requests per step (mount/profile.py) into FILE and `..._profile.md`. Each step is
timed with one blocking wait for the process.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "layers" / "core"), str(ROOT / "client"), str(ROOT / "bench")]

import rclone_tool  # noqa: E402

from hycloud.admin import create_user  # noqa: E402
from infra.local import deploy as local  # noqa: E402
from infra.local import uring_switch  # noqa: E402

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


def make_small_tarball(work: Path, count: int) -> Path:
    """`count` files of 100 to 4,000 bytes in 30 folders, as a source tree's small files."""
    import random

    rng, src = random.Random(3000), work / "small-src"
    for i in range(count):
        path = src / "small" / f"d{i % 30:02d}" / f"f{i:05d}.txt"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(rng.randbytes(rng.randint(100, 4000)))
    tar_path = work / "small.tar"
    with tarfile.open(tar_path, "w") as tar:
        tar.add(src / "small", arcname="small")
    shutil.rmtree(src)
    return tar_path


def make_origin(work: Path, tar_path: Path) -> Path:
    """A local git repository of the tree: what `git clone` copies into each target."""
    origin = work / "origin"
    origin.mkdir()
    run(["tar", "xf", str(tar_path)], origin)
    for cmd in (["git", "init", "-q"], ["git", "add", "."], ["git", "commit", "-q", "-m", "tree"]):
        run(cmd, origin)
    return origin


def run(cmd: list[str], cwd: Path) -> None:
    """Run a step and wait for it in one blocking wait. (`subprocess.run(timeout=...)` polls the
    child with sleeps growing to 50 ms: a 33 ms step was timed 63.5 ms, a 9 ms one 15.5 ms.) A
    timer kills a step still running after STEP_TIMEOUT_S."""
    env = {**os.environ, **GIT_ENV}
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL)
    timer = threading.Timer(STEP_TIMEOUT_S, proc.kill)
    timer.start()
    try:
        code = proc.wait()
    finally:
        timer.cancel()
    if code != 0:
        raise subprocess.CalledProcessError(code, cmd)


def timed_clone(source: str, parent: Path) -> float:
    """Seconds `git clone` of `source` takes into a new folder under `parent` (earlier clones
    stay: a user's working copies pile up too)."""
    work = parent / f"c-{uuid.uuid4().hex[:8]}"
    work.mkdir()
    t0 = time.perf_counter()
    run(["git", "clone", "-q", source, "clone"], work)
    return time.perf_counter() - t0


@dataclass
class Inputs:
    tar_path: Path
    small_tar: Path
    small_files: int
    origin: Path


QUIET_BUSY = 0.15  # the machine counts as quiet below this share of its CPUs busy
QUIET_WAIT_S = 30.0


def cpu_busy(window: float = 0.25) -> float:
    """The share of the machine's CPU time spent busy over `window` seconds (/proc/stat)."""

    def totals() -> tuple[int, int]:
        with open("/proc/stat") as stat:
            ticks = [int(t) for t in stat.readline().split()[1:]]
        return sum(ticks), ticks[3] + ticks[4]  # all, idle + iowait

    all0, idle0 = totals()
    time.sleep(window)
    all1, idle1 = totals()
    return 1 - (idle1 - idle0) / max(1, all1 - all0)


def spread_folder(folder: Path) -> None:
    """Make `folder` with ext4's top-of-hierarchy flag (`chattr +T`), so that each of its
    children, one per column, starts in a block group of its own. On ext4 without a journal (as
    here) a new inode skips every inode of its group freed in the last 60 s (360 s while the
    inode table is unwritten): a git clone on local disk took 44-67 ms right after 6,000 files
    were removed near it, 22-28 ms in a group of its own. Each mount removes its local copy at
    unmount, next to where the next column's copy went."""
    folder.mkdir()
    done = subprocess.run(["chattr", "+T", str(folder)], capture_output=True, check=False)
    if done.returncode != 0:
        NOTES.append(f"Columns not spread over block groups (chattr +T: {done.stderr.decode().strip()}).")


def wait_quiet() -> float:
    """Wait, at most QUIET_WAIT_S, until the machine is quiet; the seconds waited. So that each
    column's steps start alike, not while the mount still starts up or the local cloud still
    takes in the column before's files (it runs on the same two CPUs; the steps of one column
    still run back to back, as a person's commands would, with their uploads behind them)."""
    t0 = time.monotonic()
    while cpu_busy() > QUIET_BUSY and time.monotonic() - t0 < QUIET_WAIT_S:
        pass
    waited = time.monotonic() - t0
    if waited >= QUIET_WAIT_S:
        NOTES.append(f"A column started with the machine still busy after {QUIET_WAIT_S:g} s of waiting.")
    return waited


def scenario(
    target: Path,
    inputs: Inputs,
    out: Path,
    durable: Callable[[Path], None],
    after: Callable[[str], None] = lambda step: None,
) -> dict[str, float]:
    """Seconds per step in a fresh folder under `target`; `after` is told each step's end."""
    work = target / f"wc-{uuid.uuid4().hex[:8]}"
    work.mkdir()
    steps: list[tuple[str, Callable[[], None]]] = [
        ("git clone", lambda: run(["git", "clone", "-q", str(inputs.origin), "clone"], work)),
        ("tar x", lambda: run(["tar", "xf", str(inputs.tar_path)], work)),
        ("git init", lambda: run(["git", "init", "-q"], work)),
        ("git add .", lambda: run(["git", "add", "."], work)),
        ("git commit", lambda: run(["git", "commit", "-q", "-m", "tree"], work)),
        ("git status", lambda: run(["git", "status", "--porcelain"], work)),
        (f"tar x {inputs.small_files} small files", lambda: run(["tar", "xf", str(inputs.small_tar)], work)),
        ("cp -r out", lambda: run(["cp", "-r", str(work / "tree"), str(out)], work)),
        ("du -sb", lambda: run(["du", "-sb", str(work)], work)),
        ("durable (sync / unmount)", lambda: durable(work)),
    ]
    times: dict[str, float] = {}
    print(f"  quiet after {wait_quiet():.1f} s", flush=True)
    for name, step in steps:
        t0 = time.perf_counter()
        step()
        times[name] = round(time.perf_counter() - t0, 3)
        print(f"  {name}: {times[name]:.3f} s", flush=True)
        after(name)
    times["total"] = round(sum(times.values()), 3)
    return times


def start_mount(
    mnt: Path,
    api_url: str,
    key: str,
    log: Path,
    profile: Path | None = None,
    code: Path | None = None,
    native: bool = False,
    flags: tuple[str, ...] = (),
) -> subprocess.Popen:
    """`hycloud mount` (`--native` with `native`, then `flags`), of this tree's client or (`code`)
    of another checkout's."""
    env = {**os.environ, "HYCLOUD_ENDPOINT": api_url, "HYCLOUD_API_KEY": key}
    if profile is not None:
        env["HYCLOUD_MOUNT_PROFILE"] = str(profile)
    if code is not None:  # its packages ahead of this tree's on the path
        env["PYTHONPATH"] = os.pathsep.join([str(code / "client"), str(code / "layers" / "core")])
    env["HYCLOUD_CONFIG"] = str(log.parent / "config.json")  # none; its state file kept there
    with open(log, "wb") as err:
        cmd = [HYCLOUD, "mount", *(["--native"] if native else []), *flags, str(mnt)]
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=err)
    deadline = time.monotonic() + 30
    while not os.path.ismount(mnt):
        if proc.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"mount did not appear: {log.read_text()}")
        time.sleep(0.2)
    return proc


NOTES: list[str] = []


def unmount(mnt: Path, proc: subprocess.Popen, name: str) -> None:
    """fusermount3 -u, then the process's exit (it sends what it cached first); a process still
    alive after EXIT_WAIT_S is noted and ended with SIGTERM."""
    subprocess.run(["fusermount3", "-u", str(mnt)], check=True, timeout=60)
    try:
        proc.wait(timeout=EXIT_WAIT_S)
    except subprocess.TimeoutExpired:
        NOTES.append(
            f"The {name} process was still alive {EXIT_WAIT_S} s after fusermount3 -u; ended by SIGTERM."
        )
        proc.terminate()
        proc.wait(timeout=STEP_TIMEOUT_S)


BASELINE = "hycloud mount (baseline)"
NATIVE = "hycloud mount --native"
NATIVE_URING = "hycloud mount --native (io_uring)"
GIT_STEPS = ("git clone", "git init", "git add .", "git commit", "git status")
AIM = 3.0  # the aim for the git steps: within this many times local disk


def median_of(runs: list[dict[str, float]]) -> dict[str, float]:
    return {step: round(statistics.median(run[step] for run in runs), 3) for step in runs[0]}


def table(results: dict[str, dict[str, float]], runs: int = 1) -> str:
    """Seconds per step (the median of `runs`), the mounts' ratios to local disk first."""
    columns = list(results)
    mounts = [c for c in columns if c != "local disk"] if "local disk" in results else []
    steps = list(next(iter(results.values())))
    head = [f"{m} / disk" for m in mounts] + [f"{c} s" for c in columns]
    lines = ["| step | " + " | ".join(head) + " |", "| --- |" + " ---: |" * len(head)]
    for step in steps:
        disk = results["local disk"][step] if mounts else 0.0
        ratios = [f"{results[m][step] / disk:.1f}x" if disk > 0 else "-" for m in mounts]
        secs = [f"{results[c][step]:.3f}" for c in columns]
        lines.append(f"| {step} | " + " | ".join(ratios + secs) + " |")
    note = f"Seconds are the median of {runs} runs." if runs > 1 else ""
    return "\n".join(lines) + ("\n\n" + note if note else "")


def aim_lines(results: dict[str, dict[str, float]]) -> str:
    """Whether each git step is within AIM times local disk on each hycloud mount."""
    if "local disk" not in results:
        return ""
    out = []
    for name in ("hycloud mount", NATIVE, NATIVE_URING):
        if name not in results:
            continue
        out.append(f"{name}:\n")
        for step in GIT_STEPS:
            disk, mnt = results["local disk"][step], results[name][step]
            ratio = mnt / disk if disk > 0 else float("inf")
            line = f"- {step}: {ratio:.1f}x local disk, {'within' if ratio <= AIM else 'not within'} {AIM:g}x"
            if BASELINE in results and disk > 0 and name == "hycloud mount":
                line += f" (baseline {results[BASELINE][step] / disk:.1f}x)"
            out.append(line)
        out.append("")
    return "\n".join(out).strip()


def mark(profile: Path | None, step: str) -> None:
    """End a profiled step: the mount writes its counters since the last mark (mount/profile.py)."""
    if profile is None:
        return
    marker = Path(f"{profile}.mark")
    marker.write_text(step)
    deadline = time.monotonic() + 10
    while marker.exists() and time.monotonic() < deadline:
        time.sleep(0.01)


def profile_table(lines: list[dict]) -> str:
    """Per step: each FUSE operation's count and seconds, and the requests made under it."""
    out = []
    for line in lines:
        if line["step"] == "mount":
            continue
        out.append(
            f"### {line['step']}\n\n| operation | calls | errors | s | max ms | requests | request s |"
        )
        out.append("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
        http: dict[str, list[float]] = {}
        for key, row in line["http"].items():
            op = key.split(" ", 1)[0]
            http.setdefault(op, [0, 0.0])
            http[op][0] += row["n"]
            http[op][1] += row["s"]
        for op, row in sorted(line["ops"].items(), key=lambda item: -item[1]["s"]):
            n, secs = http.pop(op, [0, 0.0])
            out.append(
                f"| {op} | {row['n']} | {row['errors']} | {row['s']:.3f} | {row['max_s'] * 1000:.1f} "
                f"| {n:.0f} | {secs:.3f} |"
            )
        for op, (n, secs) in http.items():
            out.append(f"| {op} | - | - | - | - | {n:.0f} | {secs:.3f} |")
        routes = ", ".join(f"{k} x{v['n']}" for k, v in sorted(line["http"].items()))
        out.append(f"\nRequests: {routes or 'none'}\n")
    return "\n".join(out)


def hycloud_column(
    base: Path,
    inputs: Inputs,
    api_url: str,
    key: str,
    profile: Path | None = None,
    code: Path | None = None,
    native: bool = False,
    uring: bool = False,
) -> dict[str, float]:
    mnt = base / f"mnt-{uuid.uuid4().hex[:6]}"
    mnt.mkdir()
    name = (NATIVE_URING if uring else NATIVE) if native else "hycloud mount"
    flags: tuple[str, ...] = ("--io-uring",) if uring else ("--no-io-uring",) if native else ()
    cache = base / f"cache-{mnt.name}"  # a child of the run's folder: a block group of its own
    cache.mkdir()
    flags += ("--cache-dir", str(cache))
    proc = start_mount(mnt, api_url, key, base / f"mount-{mnt.name}.log", profile, code, native, flags)
    print(name, flush=True)
    mark(profile, "mount")
    try:
        durable = lambda work: unmount(mnt, proc, name)  # noqa: E731
        return scenario(
            mnt,
            inputs,
            base / f"out-{mnt.name}",
            durable,
            lambda step: proc.poll() is None and mark(profile, step),
        )
    finally:
        if proc.poll() is None:
            subprocess.run(["fusermount3", "-u", "-z", str(mnt)], check=False, timeout=60)
            proc.wait(timeout=60)


def files_under(folder: Path) -> int:
    return sum(len(files) for _, _, files in os.walk(folder))


def rclone_column(base: Path, inputs: Inputs, s3_endpoint: str) -> dict[str, float]:
    """The scenario through `rclone mount` of a new bucket; the bucket is removed after."""
    import boto3
    from botocore.config import Config

    s3 = boto3.client(
        "s3",
        endpoint_url=s3_endpoint,
        region_name="us-east-1",
        aws_access_key_id="test",
        aws_secret_access_key="test",
        config=Config(s3={"addressing_style": "path"}),
    )
    bucket = f"bench-rclone-{uuid.uuid4().hex[:8]}"
    s3.create_bucket(Bucket=bucket)
    mnt, log = base / "rclone-mnt", base / "rclone.log"
    mnt.mkdir()
    cmd = [rclone_tool.rclone(), "mount", rclone_tool.s3_remote(s3_endpoint, bucket), str(mnt)]
    cmd += ["--vfs-cache-mode", "writes", "--cache-dir", str(base / "rclone-cache")]
    with open(log, "wb") as err:
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err)
    try:
        deadline = time.monotonic() + 30
        while not os.path.ismount(mnt):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"rclone mount did not appear: {log.read_text()}")
            time.sleep(0.2)

        def durable(work: Path) -> None:
            """Until the bucket holds every file of the folder, then unmount."""
            want = files_under(work)
            deadline = time.monotonic() + STEP_TIMEOUT_S
            while _objects(s3, bucket) < want and time.monotonic() < deadline:
                time.sleep(0.5)
            unmount(mnt, proc, "rclone mount")

        return scenario(mnt, inputs, base / "out-rclone", durable)
    finally:
        if proc.poll() is None:
            subprocess.run(["fusermount3", "-u", "-z", str(mnt)], check=False, timeout=60)
            proc.wait(timeout=60)
        _remove_bucket(s3, bucket)


def _objects(s3, bucket: str) -> int:
    return sum(
        page.get("KeyCount", 0) for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket)
    )


def _remove_bucket(s3, bucket: str) -> None:
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket):
        keys = [{"Key": o["Key"]} for o in page.get("Contents", [])]
        if keys:
            s3.delete_objects(Bucket=bucket, Delete={"Objects": keys})
    s3.delete_bucket(Bucket=bucket)


def load(when: str) -> str:
    """The machine's load average now (it is shared: figures taken under load say so)."""
    one, five, fifteen = os.getloadavg()
    return f"{when} {one:.2f}, {five:.2f}, {fifteen:.2f}"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--label", default="", help="a note kept with the figures (e.g. before/after)")
    parser.add_argument("--out", default=str(ROOT / "bench" / "results"))
    parser.add_argument("--small-files", type=int, default=3000, help="files of the small-files tar x step")
    parser.add_argument("--runs", type=int, default=1, help="runs of every column; the table shows medians")
    parser.add_argument("--no-rclone", action="store_true", help="leave the rclone mount column out")
    parser.add_argument("--no-hycloud", action="store_true", help="leave the hycloud mount columns out")
    parser.add_argument(
        "--no-native", action="store_true", help="leave the hycloud mount --native column out"
    )
    parser.add_argument(
        "--no-io-uring",
        action="store_true",
        help="leave out the --native column over FUSE's io_uring transport (as root, the bench turns "
        "the fuse module's enable_uring on for the run and back after; Linux 6.14+)",
    )
    parser.add_argument(
        "--baseline",
        metavar="DIR",
        help="also a column of the mount of another checkout (its client/ and layers/core/, e.g. from "
        "`git archive REV client layers/core`), run beside this one under the same load",
    )
    parser.add_argument(
        "--profile",
        metavar="FILE",
        help="count the hycloud mount's FUSE operations and requests per step into FILE (JSON lines)",
    )
    args = parser.parse_args()
    outputs, _ = local.running_deployment()
    key = create_user(outputs["TableName"], f"bench-{uuid.uuid4().hex[:8]}")
    s3_endpoint = outputs["LocalApiUrl"].split("/restapis/")[0]
    profile = Path(args.profile).resolve() if args.profile else None
    columns: dict[str, list[dict[str, float]]] = {}
    loads: list[str] = []
    with tempfile.TemporaryDirectory(prefix="mount-bench-") as tmp:
        base = Path(tmp)
        tar_path, files, size = make_tarball(base)
        inputs = Inputs(
            tar_path,
            make_small_tarball(base, args.small_files),
            args.small_files,
            make_origin(base, tar_path),
        )
        print(f"tree: {files} files, {size} bytes; {args.small_files} small files", flush=True)
        with uring_switch.switched_on() if uring_column(args) else contextlib.nullcontext():
            for run_no in range(args.runs):
                run_base = base / f"run{run_no}"
                spread_folder(run_base)
                one_run(
                    run_base, inputs, args, outputs["LocalApiUrl"], key, s3_endpoint, profile, columns, loads
                )
        note = " ".join(dict.fromkeys(NOTES))
    results = {name: median_of(runs) for name, runs in columns.items()}
    text = f"# Mount bench {args.label}\n\nTree: {files} files, {size} bytes ({', '.join(PACKAGES)}); "
    text += f"{args.small_files} small files (100-4,000 bytes).\n\n"
    text += table(results, args.runs) + "\n\n" + (note + "\n" if note else "")
    aims = aim_lines(results)
    text += f"\nThe git steps against the aim (within {AIM:g}x local disk):\n\n{aims}\n" if aims else ""
    text += "\nLoad average (1, 5, 15 min) of the shared machine: " + "; ".join(loads) + ".\n"
    print(text)
    doc = {"label": args.label, "files": files, "bytes": size, "small_files": args.small_files}
    doc |= {"runs": args.runs, "seconds": results, "every_run": columns, "note": note, "load_average": loads}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    name = "mount_bench" + (f"_{args.label}" if args.label else "")
    (out / f"{name}.json").write_text(json.dumps(doc, indent=2) + "\n")
    (out / f"{name}.md").write_text(text)
    if profile is not None and profile.exists():
        lines = [json.loads(line) for line in profile.read_text().splitlines()]
        (out / f"{name}_profile.md").write_text(f"# Mount profile {args.label}\n\n" + profile_table(lines))


def uring_column(args: argparse.Namespace) -> bool:
    """Whether the --native (io_uring) column runs: main holds the fuse module's enable_uring on
    for the run then (and puts it back); args.no_io_uring set when it cannot."""
    if args.no_hycloud or args.no_native or args.no_io_uring:
        return False
    if not uring_switch.available():
        NOTES.append(
            "No --native (io_uring) column: it needs root and Linux 6.14+ (the fuse module's enable_uring)."
        )
        args.no_io_uring = True
        return False
    NOTES.append(
        "The --native (io_uring) column ran with the fuse module's enable_uring on (set for the run)."
    )
    return True


def one_run(
    base: Path,
    inputs: Inputs,
    args: argparse.Namespace,
    api_url: str,
    key: str,
    s3_endpoint: str,
    profile: Path | None,
    columns: dict[str, list[dict[str, float]]],
    loads: list[str],
) -> None:
    """Every column once, each in its own fresh folders under `base`."""
    (base / "disk").mkdir()
    print("local disk", flush=True)
    loads.append(load("local disk column"))
    disk = scenario(base / "disk", inputs, base / "out-disk", lambda work: run(["sync"], base))
    columns.setdefault("local disk", []).append(disk)
    if args.no_hycloud:
        NOTES.append("Run with --no-hycloud: no hycloud mount column.")
    else:
        if args.baseline:
            loads.append(load("hycloud baseline column"))
            baseline = hycloud_column(base, inputs, api_url, key, code=Path(args.baseline).resolve())
            columns.setdefault(BASELINE, []).append(baseline)
        loads.append(load("hycloud column"))
        columns.setdefault("hycloud mount", []).append(hycloud_column(base, inputs, api_url, key, profile))
        if not args.no_native:
            loads.append(load("hycloud --native column"))
            columns.setdefault(NATIVE, []).append(hycloud_column(base, inputs, api_url, key, native=True))
            if not args.no_io_uring:
                loads.append(load("hycloud --native io_uring column"))
                column = hycloud_column(base, inputs, api_url, key, native=True, uring=True)
                columns.setdefault(NATIVE_URING, []).append(column)
    if args.no_rclone:
        NOTES.append("Run with --no-rclone: no rclone mount column.")
        return
    try:
        print(f"rclone mount ({rclone_tool.version()})", flush=True)
        loads.append(load("rclone column"))
        columns.setdefault("rclone mount (S3)", []).append(rclone_column(base, inputs, s3_endpoint))
        NOTES.append(f"{rclone_tool.version()}: `rclone mount :s3:BUCKET --vfs-cache-mode writes`.")
    except rclone_tool.RcloneUnavailable as err:
        NOTES.append(f"No rclone mount column: {err}")


if __name__ == "__main__":
    main()
