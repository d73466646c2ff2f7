"""Keys and the folder header: the right secret opens a folder, a wrong one or an edit does not."""

from __future__ import annotations

import json

import pytest

from hycloud_core.crypto import header as hdr
from hycloud_core.crypto.errors import FormatError, IntegrityError, WrongKeyError
from hycloud_core.crypto.keys import FolderKeys, KdfParams, subkey

CHEAP = KdfParams(n=2**10)


def test_the_secret_opens_its_slot_and_a_wrong_one_is_refused():
    header, folder_key = hdr.create("alice", b"correct horse", CHEAP)
    parsed = hdr.parse(header.to_bytes())
    assert hdr.open_key(parsed, "alice", b"correct horse") == folder_key
    with pytest.raises(WrongKeyError):
        hdr.open_key(parsed, "alice", b"wrong horse")
    assert folder_key.hex() not in header.to_bytes().decode()


def test_rotation_rewraps_the_same_folder_key_and_retires_the_old_secret():
    header, folder_key = hdr.create("alice", b"old secret", CHEAP)
    rotated = hdr.rewrap(header, folder_key, "alice", b"new secret", CHEAP)
    assert rotated.epoch == header.epoch + 1
    assert hdr.open_key(hdr.parse(rotated.to_bytes()), "alice", b"new secret") == folder_key
    with pytest.raises(WrongKeyError):
        hdr.open_key(rotated, "alice", b"old secret")


def test_a_second_users_slot_opens_the_same_key():
    header, folder_key = hdr.create("alice", b"alice's", CHEAP)
    shared = hdr.rewrap(header, folder_key, "bob", b"bob's", CHEAP)
    assert hdr.open_key(shared, "bob", b"bob's") == folder_key
    assert hdr.open_key(shared, "alice", b"alice's") == folder_key
    assert hdr.drop_slot(shared, folder_key, "bob").slots.keys() == {"alice"}


def test_an_edited_header_is_refused():
    header, _ = hdr.create("alice", b"pw", CHEAP)
    raw = json.loads(header.to_bytes())
    raw["chunking"]["avg"] = 4096
    with pytest.raises(IntegrityError):
        hdr.open_key(hdr.parse(json.dumps(raw).encode()), "alice", b"pw")
    with pytest.raises(FormatError):
        hdr.parse(b'{"format": "other"}')


def test_subkeys_differ_by_purpose_and_by_folder():
    folder_key = bytes(range(32))
    keys = FolderKeys.derive(b"f" * 16, folder_key)
    assert len({keys.chunks, keys.manifests, keys.macs, keys.names[:32]}) == 4
    assert subkey(folder_key, "chunks") == keys.chunks
    assert subkey(bytes(32), "chunks") != keys.chunks
