"""The stat fields a mount answers `getattr` with, for plain and sealed (encrypted) files alike."""

from __future__ import annotations

import stat


def _times(mtime: float) -> dict:
    ns = int(mtime * 1e9)
    return {"st_mtime": ns, "st_ctime": ns, "st_atime": ns}


def dir_attrs(mtime: float) -> dict:
    return {**_times(mtime), "st_mode": stat.S_IFDIR | 0o755, "st_nlink": 2, "st_size": 0}


def file_attrs(size: int, mtime: float) -> dict:
    """`st_blocks` in 512-byte units, as `du` counts them (without it every file takes 0)."""
    return {
        **_times(mtime),
        "st_mode": stat.S_IFREG | 0o644,
        "st_nlink": 1,
        "st_size": size,
        "st_blocks": -(-size // 512),
    }
