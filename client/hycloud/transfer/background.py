"""Work a transfer leaves running (chunk-size adaptation, the version record): daemon threads the
CLI waits for before it exits, so none is cut off half done."""

from __future__ import annotations

import threading
from collections.abc import Callable

RUNNING: list[tuple[threading.Thread, float]] = []


def later(name: str, work: Callable[[], None], timeout: float) -> None:
    """Run `work` in the background; `settle` waits for it at most `timeout` seconds."""
    thread = threading.Thread(target=work, name=name, daemon=True)
    RUNNING.append((thread, timeout))
    thread.start()


def settle() -> None:
    """Wait for the background work started so far."""
    for entry in list(RUNNING):
        entry[0].join(entry[1])
        RUNNING.remove(entry)
