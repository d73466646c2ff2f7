"""Where a mount's time goes: each FUSE operation counted and timed, with the HTTP requests made
while it ran (and those the background threads made), behind `HYCLOUD_MOUNT_PROFILE=FILE`.

A step is measured by writing its name into `FILE.mark`: the counters since the last mark are
appended to FILE as one JSON line under that name and start again from zero
(`bench/mount_bench.py --profile` does this around each git step). Off unless the variable is
set: nothing is wrapped then.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable, Iterable
from functools import wraps
from pathlib import Path
from typing import Any

import requests

from . import threadstate

ENV = "HYCLOUD_MOUNT_PROFILE"
POLL_S = 0.05


class Profile:
    """Counters per FUSE operation and per HTTP request, reset at each mark."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._local = threading.local()
        self.reset()

    def reset(self) -> dict:
        """The counters so far, zeroed."""
        with self._lock:
            taken = {"ops": getattr(self, "ops", {}), "http": getattr(self, "http", {})}
            self.ops: dict[str, dict[str, Any]] = {}
            self.http: dict[str, dict[str, Any]] = {}
            return taken

    def op(self, name: str, fn: Callable) -> Callable:
        @wraps(fn)
        def timed(*args, **kwargs):
            self._local.op = name
            t0 = time.perf_counter()
            failed = False
            try:
                return fn(*args, **kwargs)
            except OSError:
                failed = True
                raise
            finally:
                spent = time.perf_counter() - t0
                self._local.op = None
                with self._lock:
                    row = self.ops.setdefault(name, {"n": 0, "s": 0.0, "max_s": 0.0, "errors": 0})
                    row["n"] += 1
                    row["s"] += spent
                    row["max_s"] = max(row["max_s"], spent)
                    row["errors"] += failed

        return timed

    def request(self, method: str, url: str, spent: float) -> None:
        """One HTTP request, under the operation that made it (or `background`)."""
        op = getattr(self._local, "op", None) or f"background:{threading.current_thread().name}"
        route = url.split("?", 1)[0]
        route = "/v1/" + route.split("/v1/", 1)[1] if "/v1/" in route else "s3"
        with self._lock:
            row = self.http.setdefault(f"{op} {method} {route}", {"n": 0, "s": 0.0})
            row["n"] += 1
            row["s"] += spent


def instrument(ops: object, names: Iterable[str], profile: Profile) -> None:
    """Wrap `ops`' FUSE operations `names` and every HTTP request of the process with `profile`."""
    for name in names:
        fn = getattr(ops, name, None)
        if fn is not None:
            setattr(ops, name, profile.op(name, fn))
    send = requests.Session.send

    def counted(session, request, **kwargs):
        t0 = time.perf_counter()
        try:
            return send(session, request, **kwargs)
        finally:
            profile.request(request.method, request.url, time.perf_counter() - t0)

    requests.Session.send = counted  # type: ignore[method-assign,assignment]


def _write_marks(profile: Profile, out: Path) -> None:
    mark = Path(f"{out}.mark")
    while True:
        time.sleep(POLL_S)
        try:
            label = mark.read_text().strip()
        except FileNotFoundError:
            continue
        taken = profile.reset() | {"kept_thread_states": threadstate.kept_states}
        with open(out, "a") as file:
            file.write(json.dumps({"step": label, **taken}) + "\n")
        mark.unlink(missing_ok=True)


def from_env(ops: object, names: Iterable[str]) -> Profile | None:
    """Profile `ops` when `HYCLOUD_MOUNT_PROFILE` names a file (see the module's docstring)."""
    out = os.environ.get(ENV)
    if not out:
        return None
    profile = Profile()
    instrument(ops, names, profile)
    threading.Thread(
        target=_write_marks, args=(profile, Path(out)), name="hycloud-profile", daemon=True
    ).start()
    return profile
