"""A finished download takes its file's place in one step; the old bytes go, nothing else does."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from hycloud.transfer import background, place


def _part(tmp_path: Path, data: bytes) -> Path:
    part = tmp_path / "f.bin.hycloud-part"
    part.write_bytes(data)
    return part


@pytest.mark.parametrize("exchange", [True, False], ids=["exchanged", "replaced"])
def test_the_new_bytes_take_the_place_and_the_old_ones_are_freed(tmp_path, monkeypatch, exchange):
    if not exchange:
        monkeypatch.setattr(place, "_exchange", lambda a, b: False)
    target = tmp_path / "f.bin"
    target.write_bytes(b"old" * 1000)
    inode = os.stat(target).st_ino
    place.put_in_place(_part(tmp_path, b"new"), target)
    assert target.read_bytes() == b"new"
    background.settle()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.bin"]
    assert os.stat(target).st_ino != inode


def test_a_reader_holding_the_old_file_keeps_reading_it(tmp_path):
    target = tmp_path / "f.bin"
    target.write_bytes(b"old bytes")
    with open(target, "rb") as held:
        place.put_in_place(_part(tmp_path, b"new bytes"), target)
        background.settle()
        assert held.read() == b"old bytes"
    assert target.read_bytes() == b"new bytes"


def test_nothing_there_or_a_folder_there_is_never_exchanged(tmp_path):
    target = tmp_path / "new.bin"
    place.put_in_place(_part(tmp_path, b"x"), target)
    assert target.read_bytes() == b"x"
    folder = tmp_path / "dir"
    (folder / "inner").mkdir(parents=True)
    with pytest.raises(OSError):
        place.put_in_place(_part(tmp_path, b"y"), folder)
    assert (folder / "inner").is_dir()


def test_a_link_is_replaced_as_a_link_not_followed(tmp_path):
    real = tmp_path / "real.bin"
    real.write_bytes(b"kept")
    link = tmp_path / "link.bin"
    link.symlink_to(real)
    place.put_in_place(_part(tmp_path, b"new"), link)
    assert not link.is_symlink() and link.read_bytes() == b"new"
    assert real.read_bytes() == b"kept"


def test_on_linux_the_old_file_is_exchanged_and_freed_off_the_path(tmp_path, monkeypatch):
    later: list = []
    monkeypatch.setattr(background, "later", lambda name, work, timeout: later.append(work))
    target = tmp_path / "f.bin"
    target.write_bytes(b"old")
    place.put_in_place(_part(tmp_path, b"new"), target)
    (old,) = [p for p in tmp_path.iterdir() if p.name.endswith(".old.hycloud-part")]
    assert old.read_bytes() == b"old" and target.read_bytes() == b"new"
    later[0]()
    assert not old.exists()
