"""Apply either kind of delta: rsync-style (a zstd stream) or version-aware (HCVD)."""

from __future__ import annotations

from typing import BinaryIO

from . import versioned
from .patcher import patch


def is_versioned(head: bytes) -> bool:
    return head[:4] == versioned.MAGIC


def apply_delta(base: BinaryIO, delta: BinaryIO, out: BinaryIO, check: bool = True) -> int:
    """Rebuild the new file from `base` and a delta of either kind; both verify the result's hash
    (a version-aware one not when the caller checks the bytes itself, `check` False)."""
    head = delta.read(4)
    delta.seek(0)
    return versioned.apply(base, delta, out, check) if is_versioned(head) else patch(base, delta, out)
