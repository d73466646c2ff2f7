"""The fuse module's io_uring switch, on for a test run: the native mount's tests run over both of
its transports (`/dev/fuse`, and io_uring where the kernel has it). Root only; elsewhere, and
inside a run that already holds it (its environment says so), nothing changes."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

SWITCH = Path("/sys/module/fuse/parameters/enable_uring")
HELD = "HYCLOUD_URING_SWITCH_HELD"  # set for the run's processes while the switch is held on


def available() -> bool:
    """Root, on a kernel with the switch (Linux 6.14+)."""
    return os.geteuid() == 0 and SWITCH.exists()


def is_on() -> bool:
    return SWITCH.exists() and SWITCH.read_text().strip() == "Y"


def in_use() -> bool:
    """Whether a native mount here gets FUSE over io_uring: the switch on, and io_uring not
    forbidden to this process (kernel.io_uring_disabled 1 or 2)."""
    forbidden = Path("/proc/sys/kernel/io_uring_disabled")
    return is_on() and (not forbidden.exists() or forbidden.read_text().strip() == "0")


@contextlib.contextmanager
def switched_on() -> Iterator[None]:
    """Y for the block, then what it was. Held once per run: the runner of `make test` holds it
    around its pytest processes, which then leave it alone (they run side by side, and each
    putting back what it saw would leave it on, or turn it off under another's tests)."""
    if os.environ.get(HELD) or not available():
        yield
        return
    try:
        was = SWITCH.read_text().strip()
        SWITCH.write_text("Y")
    except OSError:  # a read-only /sys (a container): the io_uring cases skip
        yield
        return
    os.environ[HELD] = "1"
    try:
        yield
    finally:
        del os.environ[HELD]
        with contextlib.suppress(OSError):
            SWITCH.write_text(was)
