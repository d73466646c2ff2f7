"""Chunk objects: round trip, convergent within a folder only, refused when altered, swapped or cut."""

from __future__ import annotations

import os

import pytest

from hycloud_core.crypto import chunks
from hycloud_core.crypto.errors import IntegrityError
from hycloud_core.crypto.keys import FolderKeys

KEYS = FolderKeys.derive(b"a" * 16, bytes(32))
OTHER = FolderKeys.derive(b"b" * 16, bytes(range(32)))


def test_round_trip_with_rounded_size():
    plain = b"PLAINTEXT-MARKER " * 1000
    ref, blob = chunks.seal(KEYS, plain)
    assert chunks.open_(KEYS, ref, blob) == plain
    assert b"PLAINTEXT-MARKER" not in blob
    assert (len(blob) - len(chunks.MAGIC) - 16) % chunks.PAD == 0
    assert ref.size == len(plain)


def test_convergent_within_a_folder_and_not_across_folders():
    plain = os.urandom(70_000)
    assert chunks.seal(KEYS, plain) == chunks.seal(KEYS, plain)
    assert chunks.seal(KEYS, plain)[0].name != chunks.seal(OTHER, plain)[0].name


@pytest.mark.parametrize(
    "damage",
    [
        lambda b: b[:-1],  # truncated
        lambda b: b[:20] + bytes([b[20] ^ 1]) + b[21:],  # one bit flipped
        lambda b: b + b"\x00",  # extended
    ],
)
def test_altered_objects_are_refused(damage):
    ref, blob = chunks.seal(KEYS, os.urandom(5000))
    with pytest.raises(IntegrityError):
        chunks.open_(KEYS, ref, damage(blob))


def test_a_swapped_chunk_is_refused_even_when_it_is_valid():
    ref_a, _ = chunks.seal(KEYS, b"a" * 5000)
    _, blob_b = chunks.seal(KEYS, b"b" * 5000)
    with pytest.raises(IntegrityError, match="swapped"):
        chunks.open_(KEYS, ref_a, blob_b)


def test_a_chunk_opened_under_another_folders_key_is_refused():
    ref, blob = chunks.seal(KEYS, b"x" * 100)
    with pytest.raises(IntegrityError):
        chunks.open_(OTHER, ref, blob)


def test_compressible_chunks_shrink_and_random_ones_stay_raw():
    text = b"".join(b"line %d of a source file\n" % i for i in range(3000))
    ref, blob = chunks.seal(KEYS, text)
    assert len(blob) < len(text) // 3 and chunks.open_(KEYS, ref, blob) == text
    noise = os.urandom(65536)
    ref, blob = chunks.seal(KEYS, noise)
    assert len(noise) < len(blob) <= len(noise) + 1 + chunks.PAD + len(chunks.MAGIC) + 16
    assert chunks.open_(KEYS, ref, blob) == noise


def test_reused_buffers_leave_nothing_of_an_earlier_chunk():
    import threading

    small = b"small chunk " * 20
    chunks.seal(KEYS, os.urandom(200_000))  # fills this thread's buffers with other bytes
    here = chunks.seal(KEYS, small)
    elsewhere: list = []
    worker = threading.Thread(target=lambda: elsewhere.append(chunks.seal(KEYS, small)))
    worker.start()
    worker.join()
    assert elsewhere == [here] and chunks.open_(KEYS, *here) == small


def test_a_chunk_key_is_the_hkdf_subkey_the_format_names():
    """The per-chunk key's fast path (Extract once per folder, one HMAC per chunk) gives exactly
    HKDF-SHA256(chunk key, "hycloud-enc-1/chunk/<hex>"), so folders written before still open."""
    import hashlib
    import os

    from hycloud_core.crypto.keys import FolderKeys, subkey

    for _ in range(5):
        fk = FolderKeys.derive(os.urandom(16), os.urandom(32))
        digest = hashlib.sha256(os.urandom(100)).digest()
        assert chunks.chunk_key(fk, digest) == subkey(fk.chunks, "chunk/" + digest.hex())
