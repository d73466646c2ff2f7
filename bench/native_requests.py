"""What a git working copy asks of `hycloud mount --native`, and what one request costs.

Mounts the native daemon over the in-memory cloud of the unit tests (no network: the figures are
the kernel's and the daemon's alone), with `HYCLOUD_FUSED_DEBUG=1`, and counts the FUSE requests
of each git step of bench/mount_bench.py's tree by opcode. Then times `os.stat` of absent names
(one LOOKUP each) through the mount against local disk, and again with this process and the
daemon on one CPU.

    .venv/bin/python bench/native_requests.py [--stats 5000]

Writes bench/results/native_requests.md.
"""

from __future__ import annotations

import argparse
import collections
import os
import re
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


def lookup_us(folder: Path, count: int, tag: str) -> float:
    t0 = time.perf_counter()
    for i in range(count):
        try:
            os.stat(folder / f"absent-{tag}-{i}")
        except FileNotFoundError:
            pass
    return (time.perf_counter() - t0) / count * 1e6


def time_lookups(base: Path, count: int) -> list[tuple[str, float, float]]:
    rows = []
    for label, pin in (("any CPU", None), ("this process and the daemon on CPU 0", {0})):
        old = os.sched_getaffinity(0)
        if pin:
            os.sched_setaffinity(0, pin)
        try:
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


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--stats", type=int, default=5000, help="absent names stat'ed per timing")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="native-requests-") as tmp:
        (Path(tmp) / "steps").mkdir()
        steps = count_steps(Path(tmp) / "steps")
        lookups = time_lookups(Path(tmp), args.stats)
    lines = ["# Requests of `hycloud mount --native` (client/native)", ""]
    lines += ["| step | requests | the most frequent |", "| --- | ---: | --- |"]
    for name, counts in steps:
        top = ", ".join(f"{op} {n}" for op, n in counts.most_common(6))
        lines.append(f"| {name} | {sum(counts.values())} | {top} |")
    lines += ["", f"`os.stat` of {args.stats} absent names (one LOOKUP each), best of 3:", ""]
    lines += ["| where | through the mount, us | local disk, us |", "| --- | ---: | ---: |"]
    lines += [f"| {label} | {through:.1f} | {disk:.1f} |" for label, through, disk in lookups]
    one, five, fifteen = os.getloadavg()
    lines += ["", f"Load average at the end: {one:.2f}, {five:.2f}, {fifteen:.2f}.", ""]
    text = "\n".join(lines)
    print(text)
    (ROOT / "bench" / "results" / "native_requests.md").write_text(text)


if __name__ == "__main__":
    main()
