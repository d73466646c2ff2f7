"""Names: deterministic, URL-safe, never plaintext, refused when altered."""

from __future__ import annotations

import re

import pytest

from hycloud_core.crypto import names
from hycloud_core.crypto.errors import FormatError, IntegrityError
from hycloud_core.crypto.keys import FolderKeys

KEYS = FolderKeys.derive(b"a" * 16, bytes(32))


def test_deterministic_round_trip_in_lowercase_base32():
    stored = names.encrypt(KEYS, "Quarterly report.pdf")
    assert stored == names.encrypt(KEYS, "Quarterly report.pdf")
    assert re.fullmatch(r"[a-z2-7]+", stored)
    assert "report" not in stored.lower()
    assert names.decrypt(KEYS, stored) == "Quarterly report.pdf"
    assert names.encrypt(KEYS, "a") != names.encrypt(KEYS, "b")
    assert names.encrypt(FolderKeys.derive(b"b" * 16, bytes(range(32))), "a") != names.encrypt(KEYS, "a")


def test_lengths_are_rounded_and_the_longest_name_fits_a_path_element():
    assert len(names.encrypt(KEYS, "a")) == len(names.encrypt(KEYS, "a" * 16))
    assert len(names.encrypt(KEYS, "é" * 64)) <= 255
    with pytest.raises(FormatError):
        names.encrypt(KEYS, "x" * 129)
    with pytest.raises(FormatError):
        names.encrypt(KEYS, "a/b")


def test_an_altered_name_is_refused():
    stored = names.encrypt(KEYS, "notes.txt")
    flipped = ("b" if stored[3] == "a" else "a").join([stored[:3], stored[4:]])
    with pytest.raises(IntegrityError):
        names.decrypt(KEYS, flipped)
