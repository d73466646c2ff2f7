"""Manifests: bound to their path and kind, refused when altered, cut, or older than seen."""

from __future__ import annotations

import pytest

from hycloud_core.crypto import manifest
from hycloud_core.crypto.chunks import ChunkRef
from hycloud_core.crypto.errors import IntegrityError, RollbackError
from hycloud_core.crypto.keys import FolderKeys

KEYS = FolderKeys.derive(b"a" * 16, bytes(32))
BODY = manifest.FileManifest(10, "00" * 32, [ChunkRef("ab" * 32, "cd" * 32, 10)]).to_json()


def test_round_trip_keeps_the_counter_and_hides_the_body():
    blob = manifest.seal(KEYS, manifest.FILE, "docs/secret-name.txt", 7, BODY)
    opened = manifest.open_(KEYS, manifest.FILE, "docs/secret-name.txt", blob, seen=7)
    assert opened.counter == 7 and manifest.FileManifest.from_json(opened.body).size == 10
    assert b"secret-name" not in blob and b"cd" * 32 not in blob
    assert manifest.counter_of(blob) == 7
    assert (len(blob) - 25 - 16 - 32) % 256 == 0  # head, GCM tag, HMAC around a padded body


def test_an_older_manifest_than_seen_is_a_rollback():
    old = manifest.seal(KEYS, manifest.FOLDER, "", 3, manifest.DirMap().to_json())
    with pytest.raises(RollbackError):
        manifest.open_(KEYS, manifest.FOLDER, "", old, seen=4)


@pytest.mark.parametrize(
    "damage",
    [lambda b: b[:-1], lambda b: b[:40], lambda b: b[:30] + bytes([b[30] ^ 1]) + b[31:], lambda b: b""],
)
def test_altered_or_cut_manifests_are_refused(damage):
    blob = manifest.seal(KEYS, manifest.FILE, "a.txt", 1, BODY)
    with pytest.raises(IntegrityError):
        manifest.open_(KEYS, manifest.FILE, "a.txt", damage(blob))


def test_a_manifest_moved_to_another_path_or_kind_is_refused():
    blob = manifest.seal(KEYS, manifest.FILE, "a.txt", 1, BODY)
    with pytest.raises(IntegrityError):
        manifest.open_(KEYS, manifest.FILE, "b.txt", blob)
    with pytest.raises(IntegrityError):
        manifest.open_(KEYS, manifest.FOLDER, "a.txt", blob)


def test_a_counter_raised_by_hand_is_refused():
    blob = bytearray(manifest.seal(KEYS, manifest.FILE, "a.txt", 1, BODY))
    blob[12] = 99  # the counter's last byte: the HMAC covers it
    with pytest.raises(IntegrityError):
        manifest.open_(KEYS, manifest.FILE, "a.txt", bytes(blob))


def test_a_chunk_list_that_does_not_add_up_is_refused():
    with pytest.raises(IntegrityError):
        manifest.FileManifest.from_json({**BODY, "size": 11})
