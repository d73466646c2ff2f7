"""What the scan tests share: files written with a chosen mtime, and a record of the files whose
content a scan reads."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from hycloud.sync import scan as scan_module
from hycloud_core import content


def write_at(path: Path, data: bytes, mtime: float) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    os.utime(path, (mtime, mtime))


def count_reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the files whose content the scan reads, in order, from now on."""
    read: list[str] = []
    real = content.hash_file

    def hash_file(path, *args, **kwargs):
        read.append(Path(path).name)
        return real(path, *args, **kwargs)

    monkeypatch.setattr(scan_module.content, "hash_file", hash_file)
    return read
