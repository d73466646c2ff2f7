"""The file-record key of deployments before the directory index: the whole path, `F#<path>`.

Only two readers know it: upkeep's migration (migrate_records.py), which moves such records to
their folder-id keys, and records.py's fallback, which reads and removes them in a namespace
not yet migrated. Nothing writes it any more.
"""

from __future__ import annotations

OLD_PREFIX = "F#/"  # a path always starts with "/"; a folder id never does


def old_file_key(user: str, path: str) -> dict[str, str]:
    return {"pk": f"NS#{user}", "sk": f"F#{path}"}
