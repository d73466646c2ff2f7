"""A rebuilt file's bytes are written in order while its hashes are taken; a failed write is
reported, never lost, and never blocks the writer."""

from __future__ import annotations

import hashlib
import io
import os
import threading

import pytest

from hycloud_core import content
from hycloud_core.hashing_writer import HashingWriter

MiB = 1024 * 1024


@pytest.mark.parametrize("piece", [1, 1000, 3 * MiB + 7, 8 * MiB, 23 * MiB])
def test_every_piece_reaches_every_writer_in_order_and_both_hashes_are_right(piece):
    data = os.urandom(30 * MiB + 11) if piece > 1 else os.urandom(5000)
    a, b = io.BytesIO(), io.BytesIO()
    writer = HashingWriter([a.write, b.write], sha256=True)
    for i in range(0, len(data), piece):
        assert writer.write(memoryview(data)[i : i + piece]) == len(data[i : i + piece])
    writer.close()
    assert a.getvalue() == b.getvalue() == data
    assert writer.content_hash == content.hash_bytes(data)
    assert writer.sha256 == hashlib.sha256(data).hexdigest()


def test_an_empty_file_has_the_empty_content_hash():
    writer = HashingWriter([], sha256=True)
    writer.close()
    assert writer.content_hash == content.hash_bytes(b"")
    assert writer.sha256 == hashlib.sha256(b"").hexdigest()


def test_a_failed_write_is_raised_by_close_and_later_writes_do_not_block():
    def full(_: bytes) -> None:
        raise OSError(28, "No space left on device")

    writer = HashingWriter([full], parts=False)
    try:
        for _ in range(50):  # a write after the failure is seen raises it at once
            writer.write(b"x" * 1000)
    except OSError:
        pass
    with pytest.raises(OSError, match="No space"):
        writer.close()
    assert not writer.thread.is_alive()


def test_close_leaves_no_thread_behind():
    """Only the process's shared hashing pool stays (started here first): the writer's own goes."""
    for future in [content.hash_pool().submit(int) for _ in range(4)]:
        future.result()
    before = threading.active_count()
    writer = HashingWriter([io.BytesIO().write])
    writer.write(os.urandom(17 * MiB))
    writer.close()
    assert threading.active_count() == before


def test_asking_for_a_hash_it_was_not_made_to_take_is_a_mistake():
    writer = HashingWriter([], parts=False)
    writer.close()
    with pytest.raises(AssertionError):
        _ = writer.content_hash
    with pytest.raises(AssertionError):
        _ = writer.sha256
