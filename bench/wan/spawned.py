"""SpawnedWanLink: the same link in a child process, so the client's own CPU work cannot slow it.

A link running as a thread shares the interpreter lock with the benchmark: a
client thread busy in Python code (hashing, coding, parsing) delays the
proxy's wake-ups and the link runs below its set rate. A child process has an
interpreter of its own. Counters are fetched over a pipe (about 0.1 ms a read).
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any, Self

from .link import STOP_TIMEOUT, BaseLink
from .stats import ConnectionStats

ROOT = Path(__file__).resolve().parents[2]


def _rate_arg(mbps: float | None) -> str:
    return "0" if mbps is None else repr(float(mbps))


class SpawnedWanLink(BaseLink):
    """WanLink's interface (url, bytes_up, bytes_down, reset_counters, connections, close) over a child process."""

    def _prepare(self) -> None:
        target, listen = self.target, self.listen
        self._args = [
            *("--target", f"{target[0]}:{target[1]}", "--listen", f"{listen[0]}:{listen[1]}"),
            *("--down", _rate_arg(self.down_mbps), "--up", _rate_arg(self.up_mbps)),
            *("--rtt", repr(float(self.rtt_ms)), "--max-seconds", repr(float(self.max_seconds)), "--control"),
            *(() if self.handshake else ("--no-handshake",)),
        ]
        self._proc: subprocess.Popen | None = None
        self._final: dict[str, Any] | None = None
        self._lock = threading.Lock()

    def start(self) -> Self:
        if self._proc is not None:
            return self
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
        }
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "bench.wan", *self._args],
            cwd=ROOT,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        line = self._proc.stdout.readline()
        if not line:
            self._proc.wait()
            raise RuntimeError(f"WAN link process exited with {self._proc.returncode}")
        self.address = tuple(json.loads(line)["address"])
        return self

    def _ask(self, op: str) -> dict[str, Any]:
        """One request, one reply; once the child has stopped, its final figures answer everything."""
        with self._lock:
            if self._final is None and self._proc is not None:
                try:
                    self._proc.stdin.write(json.dumps({"op": op}) + "\n")
                    self._proc.stdin.flush()
                except OSError:
                    pass  # the child stopped by itself; its final reply is waiting in the pipe
                line = self._proc.stdout.readline()
                reply = json.loads(line) if line else {"final": True}
                if reply.get("final"):
                    self._final = reply
                return reply
            return self._final or {}

    def close(self) -> None:
        if self._proc is None:
            return
        self._ask("close")
        try:
            self._proc.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        for pipe in (self._proc.stdin, self._proc.stdout):
            with contextlib.suppress(OSError):  # an unflushed request to a child that had already stopped
                pipe.close()

    def wait(self, timeout: float | None = None) -> bool:
        if self._proc is None:
            return True
        try:
            self._proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return False
        return True

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    @property
    def pid(self) -> int | None:
        return None if self._proc is None else self._proc.pid

    @property
    def bytes_up(self) -> int:
        return self._ask("totals").get("bytes_up", 0)

    @property
    def bytes_down(self) -> int:
        return self._ask("totals").get("bytes_down", 0)

    def reset_counters(self) -> None:
        self._ask("reset")

    def connections(self) -> list[ConnectionStats]:
        return [ConnectionStats(**c) for c in self._ask("connections").get("connections", [])]
