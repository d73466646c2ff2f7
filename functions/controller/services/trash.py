"""The caller's trash (hycloud_core.fs.trash): what `rm` and `rm -r` removed, listed, restored, emptied.

The route checks shapes; this turns the core's records into the API's answers. Items are kept
for the user's own trash retention, else the deployment's (`HYCLOUD_TRASH_RETENTION_S`, 30 days).
"""

from __future__ import annotations

from context import CONFIG

from hycloud_core.fs import FileSystem
from services import tree_ops


def listing(fs: FileSystem) -> dict:
    """Every item, newest first, and how long the trash keeps them."""
    trash = fs.trash
    return {
        "items": [i.to_dict() for i in trash.listing()],
        "retention_s": trash.records.retention(CONFIG.trash_retention_s),
    }


def restore(fs: FileSystem, item: str, to: str | None) -> dict:
    """Put an item back where it was (or at `to`); 409 when that path is taken."""
    entry, restored = fs.trash.restore(item, to)
    return {"restored": restored.to_dict(), "entry": entry.to_dict()}


def empty(fs: FileSystem, item: str | None) -> dict:
    """Remove one item, or all of them, for good: gone from the trash at once; what an item of
    more files than run inline holds is removed by a job (`job`, to follow)."""
    emptied, left = fs.trash.empty(item, CONFIG.tree_inline_limit)
    job = tree_ops.empty_trash(fs) if left else None
    return {"emptied": emptied, **({"job": tree_ops.answer(job)} if job else {})}
