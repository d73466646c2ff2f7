"""Patching into a real file: slices go to the kernel by writev in batches, literals are decompressed
by a thread of their own a few chunks ahead and the output is hashed by another; the bytes must be
exactly those of the new file, whatever the batching, and no thread outlives a patch, whether it
succeeds or fails."""

import hashlib
import io
import os
import random
import threading

import pytest

from hycloud_core.delta import DeltaFormatError, DeltaMismatch, delta_bytes, patch, patcher, signature_bytes


def _edited(seed: int, size: int, edits: int, literal: int) -> tuple[bytes, bytes]:
    rng = random.Random(seed)
    old = rng.randbytes(size)
    new = bytearray(old)
    for _ in range(edits):
        at = rng.randrange(len(new))
        new[at : at + 3] = rng.randbytes(rng.randint(1, literal))
    return old, bytes(new)


def _patch_file(tmp_path, old: bytes, d: bytes) -> bytes:
    (tmp_path / "old").write_bytes(old)
    (tmp_path / "delta").write_bytes(d)
    with (
        open(tmp_path / "old", "rb") as o,
        open(tmp_path / "delta", "rb") as dd,
        open(tmp_path / "out", "wb") as out,
    ):
        out.write(b"")  # an open buffered writer, as callers hand it
        n = patch(o, dd, out)
    data = (tmp_path / "out").read_bytes()
    assert n == len(data)
    return data


@pytest.mark.parametrize(
    ("block", "edits", "literal"),
    [(64, 3000, 40), (512, 200, 600_000), (4096, 0, 1)],
    ids=["more-slices-than-one-writev", "literals-longer-than-a-piece", "all-copies"],
)
def test_patch_into_a_file_rebuilds_the_new_file(tmp_path, block, edits, literal):
    old, new = _edited(block, 3 << 20, edits, literal)
    d = delta_bytes(signature_bytes(old, block), new)
    got = _patch_file(tmp_path, old, d)
    assert hashlib.sha256(got).digest() == hashlib.sha256(new).digest()


def test_short_writes_are_finished(tmp_path, monkeypatch):
    """A writev that stops early (a signal, a nearly full disk) is completed, not silently cut."""
    real = os.writev

    def short(fd, parts):
        return real(fd, parts[: max(1, len(parts) // 2)]) if len(parts) > 1 else real(fd, parts)

    monkeypatch.setattr(patcher, "lib", None)  # the Python writer: native.c resumes its own in C
    monkeypatch.setattr(patcher.os, "writev", short)
    old, new = _edited(7, 1 << 20, 500, 50)
    got = _patch_file(tmp_path, old, delta_bytes(signature_bytes(old, 256), new))
    assert got == new


def test_a_write_that_takes_nothing_ends_the_patch_instead_of_spinning(tmp_path, monkeypatch):
    """A short writev, then a write that takes 0 bytes without an error: an OSError, not a loop."""
    real = os.writev

    def short(fd, parts):
        return real(fd, parts[:1])

    monkeypatch.setattr(patcher, "lib", None)
    monkeypatch.setattr(patcher.os, "writev", short)
    monkeypatch.setattr(patcher.os, "write", lambda fd, data: 0)
    old, new = _edited(8, 1 << 20, 500, 50)
    with pytest.raises(OSError, match="took no bytes"):
        _patch_file(tmp_path, old, delta_bytes(signature_bytes(old, 256), new))
    assert not _chunk_threads()


def test_patch_into_a_file_against_the_wrong_old_file_fails(tmp_path):
    old, new = _edited(3, 1 << 20, 50, 50)
    d = delta_bytes(signature_bytes(old, 256), new)
    other = bytearray(old)
    other[5000:5010] = b"x" * 10
    with pytest.raises(DeltaMismatch):
        _patch_file(tmp_path, bytes(other), d)


def _chunk_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name in ("delta-chunks", "delta-hash")]


@pytest.mark.parametrize("cut", [None, 0.5, 0.97], ids=["whole", "cut-in-half", "cut-near-the-end"])
def test_no_thread_outlives_a_patch(tmp_path, cut):
    """Many chunks (more than the reader's pool of buffers), then a clean end or a truncated delta."""
    old, new = _edited(11, 6 << 20, 400, 20_000)
    d = delta_bytes(signature_bytes(old, 1024), new)
    if cut is None:
        assert _patch_file(tmp_path, old, d) == new
    else:
        with pytest.raises(DeltaFormatError):
            _patch_file(tmp_path, old, d[: int(len(d) * cut)])
    assert not _chunk_threads()


def test_a_bad_op_stops_the_reader_ahead_of_it(tmp_path, monkeypatch):
    """The writer fails on the first chunk while the reader has more to read: it stops too."""
    real = patcher._ranges

    def bad(*args):
        real(*args)
        raise DeltaFormatError("copy outside the old file")

    monkeypatch.setattr(patcher, "_ranges", bad)
    old, new = _edited(12, 6 << 20, 400, 20_000)
    with pytest.raises(DeltaFormatError):
        _patch_file(tmp_path, old, delta_bytes(signature_bytes(old, 1024), new))
    assert not _chunk_threads()


def test_a_failing_check_ends_the_patch_instead_of_hanging_it(tmp_path, monkeypatch):
    """The hasher fails on its second chunk while the reader needs its buffers back to go on: the
    patch must end with the error, not wait for buffers that never come."""

    class Failing:
        def __init__(self):
            self.calls = 0

        def add(self, chunk):
            self.calls += 1
            if self.calls > 1:
                raise MemoryError("hash state lost")

        def digest(self):
            return b""

    monkeypatch.setattr(patcher, "_new_check", Failing)
    old, new = _edited(13, 6 << 20, 400, 20_000)
    d = delta_bytes(signature_bytes(old, 1024), new)
    outcome: list[BaseException | None] = []

    def run():
        try:
            _patch_file(tmp_path, old, d)
            outcome.append(None)
        except BaseException as exc:
            outcome.append(exc)

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(60)
    assert not worker.is_alive(), "the patch hung"
    assert isinstance(outcome[0], MemoryError)
    assert not _chunk_threads()


@pytest.mark.parametrize("compiled", [True, False], ids=["compiled", "python"])
@pytest.mark.parametrize("block", [16, 1024])
def test_compiled_and_python_patches_write_and_check_the_same_bytes(tmp_path, monkeypatch, compiled, block):
    """native.c writes and hashes the ops (writev batches of 1,024, XXH3 as wire.result_hash); the
    Python path slices them: both give the new file, and both catch a wrong one."""
    assert patcher.lib is not None  # built by `make setup`: else this would test Python twice
    if not compiled:
        monkeypatch.setattr(patcher, "lib", None)
    old, new = _edited(block, 3 << 20, 3000, 700)  # thousands of ops: several writev batches
    d = delta_bytes(signature_bytes(old, block), new)
    assert _patch_file(tmp_path, old, d) == new
    wrong = bytearray(old)
    wrong[len(old) // 2] ^= 1  # same size, one bit off: a copy brings it into the new file
    with pytest.raises(DeltaMismatch):
        _patch_file(tmp_path, bytes(wrong), d)


@pytest.mark.parametrize("compiled", [True, False], ids=["compiled", "python"])
def test_a_write_the_file_refuses_is_an_error_not_a_short_file(tmp_path, monkeypatch, compiled):
    if not compiled:
        monkeypatch.setattr(patcher, "lib", None)
    old, new = _edited(3, 1 << 20, 50, 50)
    (tmp_path / "old").write_bytes(old)
    (tmp_path / "out").write_bytes(b"")
    d = delta_bytes(signature_bytes(old, 1024), new)
    with open(tmp_path / "old", "rb") as o, open(tmp_path / "out", "rb") as read_only:
        with pytest.raises(OSError):
            patch(o, io.BytesIO(d), read_only)
    assert not _chunk_threads()
