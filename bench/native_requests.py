"""What a git working copy asks of `hycloud mount --native`, and what one request costs.

Mounts the native daemon over the in-memory cloud of the unit tests (no network: the figures are
the kernel's and the daemon's alone), with `HYCLOUD_FUSED_DEBUG=1`, and counts the FUSE requests
of each git step of bench/mount_bench.py's tree by opcode. Then times `os.stat` of absent names
(one LOOKUP each) through the mount against local disk, and again with this process and the
daemon on one CPU. As root with a C compiler, it also times the same lookups through
bench/fuse_zero.c, a FUSE server that does no work, wherever the scheduler puts it, on this
process's CPU and on another: the round trip any FUSE server pays here; and through
the same server over FUSE's io_uring transport (the fuse module's enable_uring switched on for
that run, then back). With the git steps timed
on local disk, that gives each step's floor through FUSE: its time on disk plus, per request, what
a lookup through that server costs over one on disk.

    .venv/bin/python bench/native_requests.py [--stats 5000]

Writes bench/results/native_requests.md.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "client"), str(ROOT / "layers" / "core")]

from bench import mount_bench as mb  # noqa: E402
from hycloud.mount import native  # noqa: E402
from infra.local import uring_switch  # noqa: E402
from tests.unit.client.test_mount_writeback import FakeCloud  # noqa: E402

STEPS = (
    ("git clone", lambda origin: ["git", "clone", "-q", str(origin), "clone"]),
    ("git init", lambda origin: ["git", "init", "-q"]),
    ("git add .", lambda origin: ["git", "add", "."]),
    ("git commit", lambda origin: ["git", "commit", "-q", "-m", "tree"]),
    ("git status", lambda origin: ["git", "status", "--porcelain"]),
)


class Mounted:
    """The native mount over a fresh in-memory cloud; the daemon's stderr (its requests) in `log`."""

    def __init__(self, base: Path, pin: set[int] | None = None) -> None:
        self.dir, self.log = base / "mnt", base / "daemon.log"
        self.dir.mkdir(parents=True)
        cloud, err = FakeCloud(), open(self.log, "w")
        popen = subprocess.Popen

        def started(args, **kw):  # the daemon's stderr kept, and pinned like this process
            return popen(
                args, stderr=err, preexec_fn=(lambda: os.sched_setaffinity(0, pin)) if pin else None, **kw
            )

        native.subprocess.Popen = started  # type: ignore[assignment]
        kwargs = {"upload": cloud.upload, "signals": False}
        self.thread = threading.Thread(target=native.mount_native, args=(cloud, str(self.dir)), kwargs=kwargs)
        self.thread.start()
        deadline = time.monotonic() + 15
        while not os.path.ismount(self.dir):
            assert time.monotonic() < deadline, "the native mount did not appear"
            time.sleep(0.05)
        native.subprocess.Popen = popen  # type: ignore[assignment]
        self.err = err

    def requests(self) -> collections.Counter:
        self.err.flush()
        return collections.Counter(re.findall(r" rx \d+: (\w+)", self.log.read_text()))

    def unmount(self) -> None:
        subprocess.run(["fusermount3", "-u", str(self.dir)], check=True, timeout=30)
        self.thread.join(timeout=120)


def count_steps(base: Path) -> list[tuple[str, collections.Counter]]:
    tar_path, _, _ = mb.make_tarball(base)
    origin = mb.make_origin(base, tar_path)
    os.environ["HYCLOUD_FUSED_DEBUG"] = "1"
    try:
        mount = Mounted(base)
    finally:
        del os.environ["HYCLOUD_FUSED_DEBUG"]
    work = mount.dir / "wc"
    work.mkdir()
    rows = []
    try:
        for name, cmd in STEPS:
            if name == "git init":
                mb.run(["tar", "xf", str(tar_path)], work)
            before = mount.requests()
            subprocess.run(
                cmd(origin), cwd=work, env={**os.environ, **mb.GIT_ENV}, check=True, capture_output=True
            )
            time.sleep(0.3)  # the daemon's log of the step's last requests
            rows.append((name, mount.requests() - before))
    finally:
        mount.unmount()
    return rows


def disk_seconds(base: Path, runs: int = 3) -> dict[str, float]:
    """Each git step of STEPS on local disk, median of `runs`: the base of each step's floor."""
    tar_path, _, _ = mb.make_tarball(base)
    origin = mb.make_origin(base, tar_path)
    times: dict[str, list[float]] = collections.defaultdict(list)
    for r in range(runs):
        work = base / f"disk{r}"
        work.mkdir()
        for name, cmd in STEPS:
            if name == "git init":
                mb.run(["tar", "xf", str(tar_path)], work)
            t0 = time.perf_counter()
            mb.run(cmd(origin), work)
            times[name].append(time.perf_counter() - t0)
    return {name: statistics.median(t) for name, t in times.items()}


def lookup_us(folder: Path, count: int, tag: str) -> float:
    t0 = time.perf_counter()
    for i in range(count):
        try:
            os.stat(folder / f"absent-{tag}-{i}")
        except FileNotFoundError:
            pass
    return (time.perf_counter() - t0) / count * 1e6


def time_lookups(base: Path, count: int) -> list[tuple[str, float, float]]:
    """The mount's lookups against local disk: /dev/fuse anywhere, /dev/fuse with this process and
    the daemon on one CPU, and (where the kernel has it) io_uring with the fuse module's switch on."""
    rows = []
    places = [("any CPU", None, False), ("this process and the daemon on CPU 0", {0}, False)]
    places += [("over io_uring, any CPU", None, True)] if uring_switch.available() else []
    for label, pin, uring in places:
        old = os.sched_getaffinity(0)
        if pin:
            os.sched_setaffinity(0, pin)
        try:
            with uring_switch.switched_on() if uring else contextlib.nullcontext():
                mount = Mounted(base / label.replace(" ", "-"), pin)
                os.listdir(mount.dir)  # the root listed: later lookups are the daemon's alone
                try:
                    through = min(lookup_us(mount.dir, count, f"{label}{r}") for r in range(3))
                finally:
                    mount.unmount()
            disk = min(lookup_us(base, count, f"{label}{r}") for r in range(3))
        finally:
            os.sched_setaffinity(0, old)
        rows.append((label, through, disk))
    return rows


# (label, fuse_zero's arguments after the mount point, this process's CPU or None)
ZERO_RUNS = (
    ("/dev/fuse, any CPU", [], None),
    ("/dev/fuse, this process's CPU", ["0"], 0),
    ("/dev/fuse, another CPU", ["1"], 0),
    ("io_uring, any CPU", ["uring"], None),
)


def time_zero_server(base: Path, count: int) -> list[tuple[str, float]]:
    """Lookups through the zero servers, best of 3 per run; none without root (they mount with
    mount(2)) or a C compiler. The io_uring run turns the fuse module's switch on for its time."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if os.geteuid() != 0 or cc is None:
        return []
    exe, rows = base / "fuse_zero", []
    subprocess.run([cc, "-O2", "-pthread", "-o", str(exe), str(ROOT / "bench" / "fuse_zero.c")], check=True)
    for label, args, own_cpu in ZERO_RUNS:
        if ("1" in args and (os.cpu_count() or 1) < 2) or ("uring" in args and not uring_switch.available()):
            continue
        with uring_switch.switched_on() if "uring" in args else contextlib.nullcontext():
            rows.append((label, time_zero(base / f"zero{len(rows)}", [str(exe), *args], own_cpu, count)))
    return rows


def time_zero(mnt: Path, cmd: list[str], own_cpu: int | None, count: int) -> float:
    mnt.mkdir()
    server, old = subprocess.Popen([cmd[0], str(mnt), *cmd[1:]]), os.sched_getaffinity(0)
    try:
        deadline = time.monotonic() + 10
        while not os.path.ismount(mnt):
            assert time.monotonic() < deadline and server.poll() is None, f"{cmd[0]} did not mount"
            time.sleep(0.02)
        if own_cpu is not None:
            os.sched_setaffinity(0, {own_cpu})
        return min(lookup_us(mnt, count, f"z{r}") for r in range(3))
    finally:
        os.sched_setaffinity(0, old)
        subprocess.run(["umount", str(mnt)], check=False)
        server.wait(timeout=10)


def floor_lines(
    steps: list[tuple[str, collections.Counter]], disk: dict[str, float], zero: list, disk_us: float
) -> list[str]:
    """Each step's floor through FUSE: its time on disk plus, per request, the zero server's round
    trip over the system call on disk (`disk_us`, which the step on disk already pays)."""
    head = " | ".join(f"{label} (x disk)" for label, _ in zero)
    lines = [f"| step | requests | local disk ms | {head} |"]
    lines.append("| --- | ---: | ---: | " + " | ".join("---:" for _ in zero) + " |")
    for name, counts in steps:
        n, d = sum(counts.values()), disk[name]
        floors = [d + n * (us - disk_us) / 1e6 for _, us in zero]
        cells = " | ".join(f"{f * 1e3:.1f} ms ({f / d:.1f}x)" for f in floors)
        lines.append(f"| {name} | {n} | {d * 1e3:.1f} | {cells} |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--stats", type=int, default=5000, help="absent names stat'ed per timing")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="native-requests-") as tmp:
        (Path(tmp) / "steps").mkdir()
        steps = count_steps(Path(tmp) / "steps")
        lookups = time_lookups(Path(tmp), args.stats)
        (Path(tmp) / "disk").mkdir()
        disk = disk_seconds(Path(tmp) / "disk")
        zero = time_zero_server(Path(tmp), args.stats)
    lines = ["# Requests of `hycloud mount --native` (client/native)", ""]
    lines += ["| step | requests | the most frequent |", "| --- | ---: | --- |"]
    for name, counts in steps:
        top = ", ".join(f"{op} {n}" for op, n in counts.most_common(6))
        lines.append(f"| {name} | {sum(counts.values())} | {top} |")
    lines += ["", f"`os.stat` of {args.stats} absent names (one LOOKUP each), best of 3:", ""]
    lines += ["| where | through the mount, us | local disk, us |", "| --- | ---: | ---: |"]
    lines += [f"| {label} | {through:.1f} | {on_disk:.1f} |" for label, through, on_disk in lookups]
    if zero:
        lines += [
            "",
            "The same lookups through bench/fuse_zero.c (a FUSE server that does no work), best of 3:",
            "",
        ]
        lines += ["| the server on | us |", "| --- | ---: |"] + [
            f"| {label} | {us:.1f} |" for label, us in zero
        ]
        lines += ["", "Each git step's floor through FUSE: its time on local disk (median of 3) plus its"]
        lines += ["requests at the zero server's round trip less a lookup on disk; last, the same at the"]
        lines += ["native mount's round trip, which its measured steps follow:", ""]
        costs = [(f"zero server, {label}", us) for label, us in zero]
        costs += [(f"the native mount, {label}", us) for label, us, _ in lookups if "any CPU" in label]
        lines += floor_lines(steps, disk, costs, lookups[0][2])
    else:
        lines += ["", "No zero-server figures: they need root (mount(2)) and a C compiler."]
    one, five, fifteen = os.getloadavg()
    lines += ["", f"Load average at the end: {one:.2f}, {five:.2f}, {fifteen:.2f}.", ""]
    text = "\n".join(lines)
    print(text)
    (ROOT / "bench" / "results" / "native_requests.md").write_text(text)


if __name__ == "__main__":
    main()
