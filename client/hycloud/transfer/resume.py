"""Resume files: which pieces of a download are on disk, kept beside the partial file.

The file is replaced atomically (a temporary file, fsync, rename), so an interruption, a crash or
a full disk leaves either the previous state or the new one, never a torn or empty file. A file
that cannot be read as a state of this very transfer is ignored with a warning: the download then
starts over instead of failing on every rerun.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from hycloud_core.atomic import atomic_write


def load(path: Path, identity: dict, pieces: set[int], warn: Callable[[str], None]) -> set[int]:
    """Pieces an earlier run of the same transfer (`identity` equal) finished; empty if none."""
    try:
        state = json.loads(path.read_text())
    except FileNotFoundError:
        return set()
    except (OSError, ValueError) as err:
        warn(f"warning: ignoring unreadable resume file {path} ({err})")
        return set()
    if not isinstance(state, dict) or not _int_list(state.get("done")):
        warn(f"warning: ignoring unreadable resume file {path} (not a resume state)")
        return set()
    if any(state.get(key) != value for key, value in identity.items()):
        return set()  # another version of the file, or another piece size: start over
    done = set(state["done"])
    if not done <= pieces:
        warn(f"warning: ignoring unreadable resume file {path} (pieces out of range)")
        return set()
    return done


def _int_list(value: object) -> bool:
    return isinstance(value, list) and all(type(v) is int for v in value)


def save(path: Path, identity: dict, done: set[int]) -> None:
    """Replace the resume file with this state, atomically."""
    atomic_write(path, json.dumps({**identity, "done": sorted(done)}), fsync=True)
