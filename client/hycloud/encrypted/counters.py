"""The highest manifest counter this client has seen per folder and path (rollback defence).

Kept beside the client's state file ($HYCLOUD_STATE's folder) as JSON; a manifest older than
the counter kept here is refused, whatever the cloud serves.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path

from hycloud_core.atomic import atomic_write

_LOCK = threading.Lock()


def default_path() -> Path:
    from ..versions import state_path

    return state_path().parent / "crypt-counters.json"


class Counters:
    def __init__(self, path: Path | None = None) -> None:
        self.path = path
        self.data: dict[str, dict[str, int]] = {}
        if path is not None and path.exists():
            self.data = json.loads(path.read_text())

    def seen(self, folder_id: bytes, rel: str) -> int:
        return self.data.get(folder_id.hex(), {}).get(rel, 0)

    def note(self, folder_id: bytes, counts: dict[str, int]) -> None:
        """Remember counters read or written; kept at the highest, saved at once."""
        with _LOCK:
            mine = self.data.setdefault(folder_id.hex(), {})
            for rel, counter in counts.items():
                mine[rel] = max(mine.get(rel, 0), counter)
            if self.path is not None:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                atomic_write(self.path, json.dumps(self.data, sort_keys=True))
