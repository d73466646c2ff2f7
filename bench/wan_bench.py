"""WAN link calibration: how closely the emulated link keeps its setting, and how fast it can go.

Peer: plain loopback TCP (no link) in the same run. The bulk server runs in a
process of its own; the client is this process. For each case the rate is
taken at the receiving end from first to last byte (bench.wan.calibrate).

  capacity  unthrottled transfers (RTT 0): direct, through WanLink (thread),
            through SpawnedWanLink (child process); 1 and 4 connections
  accuracy  SpawnedWanLink at RTT 100 ms and set rates from 10 to 1000 Mbit/s:
            measured rate each way and its error
  busy      paper setting with a thread of this process busy in Python code (as
            a client hashing or coding): WanLink (thread) beside SpawnedWanLink
  latency   paper setting (50/50 Mbit/s, RTT 100 ms): one-byte exchange on a
            warm connection and on a new one (handshake emulated), direct for reference

Run:  python bench/wan_bench.py [--trials 3]
Writes bench/results/wan.json and bench/results/wan.md.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import result_files  # noqa: E402

from bench.wan import SpawnedWanLink, WanLink  # noqa: E402
from bench.wan.calibrate import download, ping_times, upload  # noqa: E402

MB = 1_000_000
CAPACITY_BYTES = 64 * MB
SET_RATES = (10, 50, 100, 200, 500, 1000, 2000, 4000)
TRANSFER_SECONDS = 1.5


def start_server() -> tuple[subprocess.Popen, tuple[str, int]]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "bench.wan.calibrate"],
        cwd=ROOT,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    return proc, ("127.0.0.1", int(proc.stdout.readline()))


def summary(values: list[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def trials(n: int, measure: Callable[[], float]) -> dict[str, float]:
    return summary([measure() for _ in range(n)])


def both_ways(address: tuple[str, int], nbytes: int, n: int) -> dict[str, dict[str, float]]:
    """Rate down, then up (bit/s), of `nbytes` through `address`: n trials each way."""
    return {
        "down": trials(n, lambda: download(address, nbytes)),
        "up": trials(n, lambda: upload(address, nbytes)),
    }


def progress(text: str) -> None:
    """A figure as soon as it is measured: a full run takes minutes."""
    print(text, flush=True)


def parallel_down(address: tuple[str, int], nbytes: int, conns: int) -> float:
    start = time.perf_counter()
    with ThreadPoolExecutor(conns) as pool:
        list(pool.map(lambda _: download(address, nbytes // conns), range(conns)))
    return nbytes * 8 / (time.perf_counter() - start)


def capacity(server: tuple[str, int], n: int) -> list[dict]:
    rows = []
    links = {"direct": None, "WanLink (thread)": WanLink, "SpawnedWanLink": SpawnedWanLink}
    for name, kind in links.items():
        link = kind(server, down_mbps=None, up_mbps=None, rtt_ms=0).start() if kind else None
        address = link.address if link else server
        try:
            one = both_ways(address, CAPACITY_BYTES, n)
            four = trials(n, lambda a=address: parallel_down(a, CAPACITY_BYTES, 4))
        finally:
            if link:
                link.close()
        rows.append({"path": name, "down_1": one["down"], "up_1": one["up"], "down_4": four})
        progress(f"capacity {name}: {_mbit(one['down'])} down, {_mbit(one['up'])} up, {_mbit(four)} down x4")
    return rows


def accuracy(server: tuple[str, int], n: int) -> list[dict]:
    rows = []
    for mbps in SET_RATES:
        nbytes = max(4 * MB, int(mbps * MB / 8 * TRANSFER_SECONDS))
        with SpawnedWanLink(server, down_mbps=mbps, up_mbps=mbps, rtt_ms=100) as link:
            rates = both_ways(link.address, nbytes, n)
        rows.append({"set_mbps": mbps, "bytes": nbytes, **rates})
        progress(
            f"accuracy {mbps} Mbit/s: "
            + ", ".join(f"{k} {_mbit(v)} ({_err(v, mbps)})" for k, v in rates.items())
        )
    return rows


def busy_client(server: tuple[str, int], n: int) -> list[dict]:
    stop = threading.Event()

    def spin() -> None:
        x = 0
        while not stop.is_set():
            for i in range(10_000):
                x += i

    rows = []
    spinner = threading.Thread(target=spin, daemon=True)
    spinner.start()
    try:
        for name, kind in {"WanLink (thread)": WanLink, "SpawnedWanLink": SpawnedWanLink}.items():
            with kind(server, down_mbps=50, up_mbps=50, rtt_ms=100) as link:
                rates = both_ways(link.address, 8 * MB, n)
            rows.append({"path": name, **rates})
            progress(f"busy client, {name}: " + ", ".join(f"{k} {_mbit(v)}" for k, v in rates.items()))
    finally:
        stop.set()
        spinner.join()
    return rows


def latency(server: tuple[str, int], n: int) -> dict:
    def exchanges(address: tuple[str, int]) -> tuple[list[float], list[float]]:
        runs = [ping_times(address, 11) for _ in range(n)]
        return [r[0] for r in runs], [t for r in runs for t in r[1:]]

    direct_first, direct_warm = exchanges(server)
    out = {}
    for name, kind in {"WanLink (thread)": WanLink, "SpawnedWanLink": SpawnedWanLink}.items():
        with kind(server, down_mbps=50, up_mbps=50, rtt_ms=100) as link:
            first, warm = exchanges(link.address)
        out[name] = {
            "new_connection_ms": summary([t * 1e3 for t in first]),
            "warm_ms": summary([t * 1e3 for t in warm]),
        }
        progress(
            f"latency {name}: warm {out[name]['warm_ms']['median']:.1f} ms, "
            f"new connection {out[name]['new_connection_ms']['median']:.1f} ms"
        )
    out["direct"] = {
        "new_connection_ms": summary([t * 1e3 for t in direct_first]),
        "warm_ms": summary([t * 1e3 for t in direct_warm]),
    }
    return out


def _mbit(s: dict[str, float]) -> str:
    return f"{s['median'] / 1e6:.1f} Mbit/s"


def _err(s: dict[str, float], mbps: float) -> str:
    return f"{(s['median'] / (mbps * 1e6) - 1) * 100:+.1f}%"


def _range(s: dict[str, float], scale: float = 1e6) -> str:
    return f"{s['median'] / scale:.1f} ({s['min'] / scale:.1f}–{s['max'] / scale:.1f})"


RATE_COLUMNS = ["down", "error", "up", "error"]


def _rate_cells(row: dict, mbps: float) -> list[str]:
    """Measured rates each way beside their error against the rate the link was set to."""
    return [_range(row["down"]), _err(row["down"], mbps), _range(row["up"]), _err(row["up"], mbps)]


def markdown(result: dict) -> str:
    lines = [
        "# WAN link calibration",
        "",
        f"{result['machine']}; {result['trials']} trials per cell, median (min–max). Other work ran on the machine.",
        "",
        "## Capacity, unthrottled, RTT 0 (Mbit/s)",
        "",
        *result_files.table(
            ["path", "down, 1 conn", "up, 1 conn", "down, 4 conns"],
            "llll",
            (
                [row["path"], _range(row["down_1"]), _range(row["up_1"]), _range(row["down_4"])]
                for row in result["capacity"]
            ),
        ),
        "",
        "## Accuracy, SpawnedWanLink, RTT 100 ms (Mbit/s)",
        "",
        *result_files.table(
            ["set", *RATE_COLUMNS],
            "lllll",
            ([row["set_mbps"], *_rate_cells(row, row["set_mbps"])] for row in result["accuracy"]),
        ),
        "",
        "## 50/50 Mbit/s, RTT 100 ms, a thread of the client process busy in Python code (Mbit/s)",
        "",
        *result_files.table(
            ["path", *RATE_COLUMNS],
            "lllll",
            ([row["path"], *_rate_cells(row, 50)] for row in result["busy_client"]),
        ),
        "",
        "## Latency, 50/50 Mbit/s, RTT 100 ms (ms, one-byte exchange)",
        "",
        *result_files.table(
            ["path", "warm connection", "new connection"],
            "lll",
            (
                [name, _range(row["warm_ms"], 1), _range(row["new_connection_ms"], 1)]
                for name, row in result["latency"].items()
            ),
        ),
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=3)
    args = parser.parse_args()
    proc, server = start_server()
    try:
        result = {
            "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
            "trials": args.trials,
            "capacity": capacity(server, args.trials),
            "accuracy": accuracy(server, args.trials),
            "busy_client": busy_client(server, args.trials),
            "latency": latency(server, args.trials),
        }
    finally:
        proc.stdin.close()
        proc.wait(10)
    result_files.write("wan", result, markdown(result))
    print(markdown(result))


if __name__ == "__main__":
    main()
