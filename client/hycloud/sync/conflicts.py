"""Names for the losing side of a conflict: `name.conflict-<device>-<time>`, beside the winner.

<device> is where the losing version came from (this machine's name, or "cloud"), <time> its
modification time in UTC, so two conflicts of the same file never take the same name.
"""

from __future__ import annotations

import os
import re
import socket
from datetime import UTC, datetime

CLOUD = "cloud"


def this_device() -> str:
    """$HYCLOUD_DEVICE, else the host name, reduced to characters safe in a file name."""
    name = os.environ.get("HYCLOUD_DEVICE") or socket.gethostname().split(".")[0] or "local"
    return re.sub(r"[^A-Za-z0-9_-]+", "-", name).strip("-") or "local"


def conflict_name(rel: str, device: str, mtime: float) -> str:
    stamp = datetime.fromtimestamp(mtime, UTC).strftime("%Y%m%dT%H%M%SZ")
    return f"{rel}.conflict-{device}-{stamp}"
