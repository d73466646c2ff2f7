"""`make test` and `make fast`: start the local cloud and deploy the app once, run alone the tests
that change what every other test sees, then the rest in two lanes.

Cloud tests marked `exclusive` (they add an instance to the ring, fail the controller over, change
a function's settings, or assert on state no test owns alone) run first, in one process with no
other cloud test running, on a cloud that holds only what they make: the ring's migration and
repair jobs walk every coded file, so after the lanes they took several times as long. Beside
them, at a lower CPU priority, the tests that need no cloud (`tests/unit`, `tests/infra`) run in
a process of their own: the exclusive tests mostly wait on the cloud, which runs in one Python
process and so leaves the second core idle. Then two pytest-xdist workers share the deployed
cloud, each with its own users, and take the cloud tests module by module; the cloud-free tests
go on beside them if they are not done (no phase waits for another while a core has work). The
local cloud's own tests (`localcloud`: one stops and restarts it) come before the deploy, the
cloud-free tests beside them. Tests marked `timing` (rates and delays of real sockets) run before
all of this, alone on a quiet machine: beside the cloud, at a lower priority, a rate of 32 Mbit/s
measured 20. The cloud is stopped at the end when this run started it. Extra arguments go to every
pytest run; `-m EXPR` narrows each phase. `--fast` (`make fast`) runs the cloud-free tests that are
not slow and the end-to-end smoke tests.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from xml.etree import ElementTree

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from infra.local import deploy as local  # noqa: E402
from infra.local import uring_switch  # noqa: E402

NO_TESTS = 5  # pytest's exit code when a phase selects nothing


def _split_marker(args: list[str]) -> tuple[str | None, list[str]]:
    """The `-m EXPR` among the arguments, and the others."""
    rest, marker = [], None
    it = iter(args)
    for arg in it:
        if arg == "-m":
            marker = next(it)
        else:
            rest.append(arg)
    return marker, rest


CLOUD_FREE = ["tests/unit", "tests/infra"]  # no test here touches the local cloud
TIMED = ["tests/unit/wan"]  # where the `timing` tests live: collecting all of CLOUD_FREE takes 40 s
CLOUD = ["tests/e2e", "tests/localcloud"]
LANES = ["-n", "2", "--dist", "loadgroup"]  # two workers share the deployed cloud, module by module
SIDE_NICE = 10  # the cloud-free tests yield the CPU to the cloud and the tests waiting on it
NO_CLOUD_LOG = local.STATE / "no-cloud.log"


def _command(marker: str, extra: str | None, args: list[str], report: Path) -> list[str]:
    expr = f"({marker}) and ({extra})" if extra else marker
    return [sys.executable, "-m", "pytest", "-m", expr, f"--junitxml={report}", *args]


def _code(code: int) -> int:
    return 0 if code == NO_TESTS else code


def _phase(marker: str, extra: str | None, args: list[str], env: dict[str, str], report: Path) -> int:
    cmd = _command(marker, extra, args, report)
    print("$", shlex.join(cmd), flush=True)
    return _code(subprocess.run(cmd, env=env).returncode)


def _beside(marker: str, extra: str | None, args: list[str], env: dict[str, str], report: Path, nice: int):
    """Start a phase in the background at priority `nice`, its output to NO_CLOUD_LOG (shown when done)."""
    cmd = _command(marker, extra, args, report)
    print(f"$ nice -n {nice} {shlex.join(cmd)} > {NO_CLOUD_LOG}", flush=True)
    out = NO_CLOUD_LOG.open("w")
    return subprocess.Popen(
        cmd, env=env, stdout=out, stderr=subprocess.STDOUT, preexec_fn=lambda: os.nice(nice)
    )


def _finish_beside(proc: subprocess.Popen) -> int:
    code = proc.wait()
    print(f"--- tests without the cloud ({NO_CLOUD_LOG}) ---", flush=True)
    print(NO_CLOUD_LOG.read_text(errors="replace"), flush=True)
    return _code(code)


def _module_of(classname: str) -> str:
    """`tests.e2e.test_x.TestY` -> `e2e.test_x`: the dotted name up to the test module."""
    parts = classname.removeprefix("tests.").split(".")
    ends = [i for i, part in enumerate(parts) if part.startswith("test_")]
    return ".".join(parts[: ends[0] + 1] if ends else parts)


def module_times(reports: list[Path], top: int = 15) -> str:
    """Where a run's time went, by test module (setup, call and teardown summed; in the lanes two
    workers run at once, so a module's share of the wall clock is about half its sum)."""
    totals: dict[str, float] = {}
    for report in reports:
        try:
            cases = ElementTree.parse(report).getroot().iter("testcase")
        except (OSError, ElementTree.ParseError):
            continue
        for case in cases:
            name = _module_of(case.get("classname") or "?")
            totals[name] = totals.get(name, 0.0) + float(case.get("time") or 0)
    ranked = sorted(totals.items(), key=lambda kv: -kv[1])[:top]
    return "slowest modules (s): " + ", ".join(f"{name} {t:.0f}" for name, t in ranked)


def guard_summary(since: float) -> str:
    """What the local cloud's AWS rules checked and refused during this run (lambda_executor/guard.py)."""
    folder = local.STATE / "guard"
    checked = refused = reported = 0
    for path in folder.glob("counts-*.json"):
        try:
            if path.stat().st_mtime < since:
                continue
            counts = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        checked += counts.get("checked", 0)
        refused += counts.get("refused", 0)
        reported += counts.get("reported", 0)
    kinds: dict[str, int] = {}
    try:
        lines = (folder / "refused.jsonl").read_text().splitlines()
    except OSError:
        lines = []
    for line in lines:
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if record.get("time", 0) >= since:
            key = f"{record.get('kind')}:{record.get('service')}:{record.get('region')}"
            kinds[key] = kinds.get(key, 0) + 1
    detail = ", ".join(f"{k} {n}" for k, n in sorted(kinds.items()))
    return f"AWS rules: {checked} calls checked, {refused} refused, {reported} reported only" + (
        f" ({detail}; see {folder / 'refused.jsonl'})" if detail else ""
    )


def cpu_ticks() -> tuple[int, int]:
    """(busy, all) clock ticks of every CPU since boot (/proc/stat); idle, I/O wait and time the
    hypervisor gave to other machines (steal) are not busy."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
    idle = fields[3] + fields[4] + fields[7]
    return sum(fields) - idle, sum(fields)


class Clock:
    """Each phase's wall time and how busy the CPUs were meanwhile: a phase near 100% gains nothing
    from more tests at once, one well below it waits on something else (sleeps, polls, the cloud's
    single process)."""

    def __init__(self) -> None:
        self.laps: list[tuple[str, float, float]] = []
        self.mark()

    def mark(self, now: float | None = None, ticks: tuple[int, int] | None = None) -> None:
        self.t0, self.cpu0 = now or time.monotonic(), ticks or cpu_ticks()

    def lap(self, name: str, restart: bool = True) -> None:
        now, ticks = time.monotonic(), cpu_ticks()
        (busy0, all0), (busy1, all1) = self.cpu0, ticks
        self.laps.append((name, now - self.t0, (busy1 - busy0) / max(all1 - all0, 1)))
        if restart:
            self.mark(now, ticks)

    def __str__(self) -> str:
        return "phases: " + ", ".join(f"{name} {s:.0f} s (CPU {100 * b:.0f}%)" for name, s, b in self.laps)


def _reports() -> dict[str, Path]:
    names = ("lanes", "exclusive", "localcloud", "no-cloud", "timing")
    reports = {name: local.STATE / f"report-{name}.xml" for name in names}
    for report in reports.values():
        report.unlink(missing_ok=True)
    return reports


@contextlib.contextmanager
def _local_cloud(clock: Clock) -> Iterator[dict[str, str]]:
    """The local cloud running for the block (started if it was not, and then stopped at its end);
    the environment of the tests that use it."""
    started = local.start()
    clock.lap("start local cloud")
    try:
        yield {**os.environ, local.DEPLOYED_ENV: "1"}
    finally:
        if started:
            local.stop()
            clock.lap("stop local cloud")


def full(extra: str | None, args: list[str], clock: Clock, reports: dict[str, Path]) -> int:
    """Every test. The local cloud's own tests run before the deploy: they stop the cloud and start
    it again at their end, and they mostly wait, leaving the CPU to the cloud-free tests beside."""
    timed = _phase("timing", extra, ["-p", "no:xdist", *args, *TIMED], dict(os.environ), reports["timing"])
    clock.lap("timed tests, alone")
    alone = ["-p", "no:xdist", *args]
    with _local_cloud(clock) as env:
        free = [*alone, *CLOUD_FREE]
        side = _beside("not exclusive and not timing", extra, free, env, reports["no-cloud"], SIDE_NICE)
        own = _phase("localcloud", extra, [*alone, *CLOUD], env, reports["localcloud"])
        clock.lap("local cloud's own (cloud-free tests beside)")
        local.deploy(log=lambda msg: None)
        clock.lap("deploy (cloud-free tests beside)")
        exclusive = _phase("exclusive and not localcloud", extra, [*alone, *CLOUD], env, reports["exclusive"])
        clock.lap("exclusive (cloud-free tests beside)")
        lanes = _phase("not exclusive", extra, [*LANES, *args, *CLOUD], env, reports["lanes"])
        clock.lap("two lanes (cloud-free tests beside, when not done)")
        freed = _finish_beside(side)
        clock.lap("cloud-free tests, to their end")
    return timed or own or exclusive or freed or lanes


def fast(extra: str | None, args: list[str], clock: Clock, reports: dict[str, Path]) -> int:
    """`make fast`: the cloud-free tests that are not slow, in two processes beside the deploy at the
    same priority (they are the longer part), and the end-to-end smoke tests (tests/conftest.py's
    SMOKE) in two lanes. A cloud already running (`make up`) is redeployed and left running."""
    quick = f"not slow and ({extra})" if extra else "not slow"
    with _local_cloud(clock) as env:
        free = ["-n", "2", *args, *CLOUD_FREE]
        side = _beside("not exclusive and not timing", quick, free, env, reports["no-cloud"], 0)
        local.deploy(log=lambda msg: None)
        clock.lap("deploy (cloud-free tests beside)")
        smoke = _phase("smoke and not exclusive", quick, [*LANES, *args, *CLOUD], env, reports["lanes"])
        clock.lap("smoke end to end in two lanes (cloud-free tests beside)")
        freed = _finish_beside(side)
        clock.lap("cloud-free tests, to their end")
    return smoke or freed


def main(argv: list[str]) -> int:
    quick = "--fast" in argv
    extra, args = _split_marker([arg for arg in argv if arg != "--fast"])
    run_started = time.time()
    reports = _reports()
    clock = Clock()
    with uring_switch.switched_on():  # held once for every pytest process of the run
        code = (fast if quick else full)(extra, args, clock, reports)
    print(module_times(list(reports.values())))
    print(clock)
    print(guard_summary(run_started))
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
