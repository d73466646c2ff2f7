"""Download resume files: written atomically, so a full disk or a crash never leaves one that
breaks later runs; an unreadable one is ignored with a warning; progress counts piece by piece."""

from __future__ import annotations

import errno
import hashlib
import io
import os
import threading
import time

import pytest

from hycloud.transfer import download, resume
from hycloud_core import atomic, content

PIECE = 1024
IDENTITY = {"content_hash": "h" * 64, "size": 10 * PIECE, "piece": PIECE}
PIECES = set(range(0, 10 * PIECE, PIECE))


class Notes:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def __call__(self, line: str) -> None:
        self.lines.append(line)


class FullDisk(io.StringIO):
    def write(self, text: str) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")


def full_disk(fd: int, *args, **kwargs) -> FullDisk:
    """What atomic_open writes to when the disk is full (the temporary's descriptor closed)."""
    os.close(fd)
    return FullDisk()


def test_enospc_while_saving_keeps_the_previous_state_and_no_temporary_file(tmp_path, monkeypatch):
    path = tmp_path / "f.hycloud-part.json"
    resume.save(path, IDENTITY, {0, PIECE})
    before = path.read_bytes()
    monkeypatch.setattr(atomic.os, "fdopen", full_disk)
    with pytest.raises(OSError) as err:
        resume.save(path, IDENTITY, {0, PIECE, 2 * PIECE})
    assert err.value.errno == errno.ENOSPC
    monkeypatch.undo()
    assert path.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == [path.name]
    assert resume.load(path, IDENTITY, PIECES, Notes()) == {0, PIECE}


@pytest.mark.parametrize(
    "raw", [b"", b"{", b"null", b"[]", b'{"done": "x"}', b'{"done": [[1]]}', b"\xff\xfe"]
)
def test_an_unreadable_resume_file_is_ignored_with_a_warning(tmp_path, raw):
    path = tmp_path / "f.hycloud-part.json"
    path.write_bytes(raw)
    notes = Notes()
    assert resume.load(path, IDENTITY, PIECES, notes) == set()
    assert len(notes.lines) == 1 and notes.lines[0].startswith("warning: ignoring unreadable resume file")


def test_a_state_of_other_content_or_out_of_range_is_not_resumed(tmp_path):
    path = tmp_path / "f.hycloud-part.json"
    resume.save(path, {**IDENTITY, "content_hash": "g" * 64}, {0})
    notes = Notes()
    assert resume.load(path, IDENTITY, PIECES, notes) == set() and notes.lines == []
    resume.save(path, IDENTITY, {0, 11 * PIECE})
    assert resume.load(path, IDENTITY, PIECES, notes) == set() and "out of range" in notes.lines[0]
    assert resume.load(tmp_path / "missing.json", IDENTITY, PIECES, notes) == set()


def source(size: int) -> tuple[bytes, str]:
    data = os.urandom(size)
    return data, content.hash_bytes(data)


def test_progress_is_recorded_as_pieces_finish_not_when_all_have(tmp_path):
    """Piece 0 never finishes; the pieces after it must be on record while it hangs."""
    data, h = source(8 * PIECE)
    target, release = tmp_path / "out.bin", threading.Event()
    _, state_file = download.part_paths(target)

    def fetch(offset: int, length: int) -> bytes:
        if offset == 0 and not release.wait(20):
            raise TimeoutError("held")
        return data[offset : offset + length]

    pieces = set(range(0, len(data), PIECE))
    runner = threading.Thread(target=download.download_ranges, args=(len(data), h, target, fetch, PIECE))
    runner.start()
    try:
        deadline = time.monotonic() + 20
        while len(resume.load(state_file, {}, pieces, Notes())) < 7 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert resume.load(state_file, {}, pieces, Notes()) == pieces - {0}
    finally:
        release.set()
        runner.join(30)
    assert hashlib.sha256(target.read_bytes()).digest() == hashlib.sha256(data).digest()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.bin"]


def test_full_disk_during_a_download_then_the_rerun_resumes_from_the_last_good_state(tmp_path, monkeypatch):
    data, h = source(6 * PIECE)
    target, fetched = tmp_path / "out.bin", []

    def fetch(offset: int, length: int) -> bytes:
        fetched.append(offset)
        return data[offset : offset + length]

    real_save, saves = resume.save, []

    def disk_fills_on_third_save(path, identity, done):
        saves.append(1)
        if len(saves) == 3:
            with monkeypatch.context() as m:
                m.setattr(atomic.os, "fdopen", full_disk)
                return real_save(path, identity, done)
        return real_save(path, identity, done)

    monkeypatch.setattr(download.resume, "save", disk_fills_on_third_save)
    with pytest.raises(OSError):
        download.download_ranges(len(data), h, target, fetch, PIECE, workers=1)
    monkeypatch.undo()
    assert not target.exists()

    fetched.clear()
    notes = Notes()

    class Progress(download.Progress):
        def note(self, message: str) -> None:
            notes(message)

    download.download_ranges(len(data), h, target, fetch, PIECE, progress=Progress(), workers=1)
    assert notes.lines == ["resuming: 2 of 6 parts done"]
    assert sorted(fetched) == [2 * PIECE, 3 * PIECE, 4 * PIECE, 5 * PIECE]
    assert target.read_bytes() == data and sorted(p.name for p in tmp_path.iterdir()) == ["out.bin"]
