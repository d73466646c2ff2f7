"""libfuse's worker threads keep their Python thread state between FUSE requests.

libfuse calls the mount's operations from its own worker threads, which Python does not know.
ctypes enters each call with `PyGILState_Ensure` and leaves it with `PyGILState_Release`, and for
such a thread the release tears down the thread state the ensure just built: every request paid
for a new one (measured on an empty mfusepy file system: a lookup of a missing name 60 µs, 37 µs
with the state kept; up to 180 µs against 40 µs on a loaded machine). `keep` makes one
unmatched `PyGILState_Ensure` on a worker's first request, so the count never drops to zero and
the state lives as long as the thread; the GIL is still released after each request (ctypes'
release restores the state it found: unlocked).

Worker threads are bounded and never retire (`max_threads` = `max_idle_threads`, see
`fuse_ops._fuse_options`), so the states kept are at most that many.
"""

from __future__ import annotations

import ctypes
import itertools
import threading
from collections.abc import Callable, Iterable
from functools import wraps

_ensure = ctypes.pythonapi.PyGILState_Ensure
_kept = threading.local()  # lives with the thread state: lost with it if it were torn down
_count = itertools.count()
kept_states = 0  # thread states kept so far (one per libfuse worker when they are kept)


def keep() -> bool:
    """Keep this thread's Python thread state from now on; True the first time in a thread."""
    global kept_states
    if getattr(_kept, "done", False):
        return False
    _ensure()
    _kept.done = True
    kept_states = next(_count) + 1
    return True


def kept(fn: Callable) -> Callable:
    @wraps(fn)
    def call(*args, **kwargs):
        if not getattr(_kept, "done", False):
            keep()
        return fn(*args, **kwargs)

    return call


def keeping(names: Iterable[str]) -> Callable[[type], type]:
    """A class decorator: the operations `names` keep their calling thread's state (`kept`)."""

    def decorate(cls: type) -> type:
        for name in names:
            if name in vars(cls):
                setattr(cls, name, kept(vars(cls)[name]))
        return cls

    return decorate
