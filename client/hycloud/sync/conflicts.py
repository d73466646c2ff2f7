"""Names for the losing side of a conflict: `name.conflict-<device>-<time>`, beside the winner.

<device> is where the losing version came from (this machine's name, or "cloud"), <time> its
modification time in UTC to the second; a name already taken (another conflict's copy from the
same second, or any other file on either side) gets `-2`, `-3`, ... so no copy overwrites a file.
"""

from __future__ import annotations

import os
import re
import socket
from collections.abc import Set as AbstractSet
from datetime import UTC, datetime

CLOUD = "cloud"


def this_device() -> str:
    """$HYCLOUD_DEVICE, else the host name, reduced to characters safe in a file name."""
    name = os.environ.get("HYCLOUD_DEVICE") or socket.gethostname().split(".")[0] or "local"
    return re.sub(r"[^A-Za-z0-9_-]+", "-", name).strip("-") or "local"


def conflict_name(rel: str, device: str, mtime: float, taken: AbstractSet[str] = frozenset()) -> str:
    stamp = datetime.fromtimestamp(mtime, UTC).strftime("%Y%m%dT%H%M%SZ")
    name, n = f"{rel}.conflict-{device}-{stamp}", 1
    while name in taken:
        n += 1
        name = f"{rel}.conflict-{device}-{stamp}-{n}"
    return name
