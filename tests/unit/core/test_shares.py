"""Share records under moto: durations, states, owner-only revocation, counters."""

from __future__ import annotations

import pytest

from hycloud_core import auth
from hycloud_core.errors import BadRequestError, NotFoundError
from hycloud_core.share_links import parse_duration
from hycloud_core.store.shares import GoneError, Shares
from hycloud_core.store.users import Users


@pytest.fixture
def owner(moto_filesystems) -> str:
    return Users(moto_filesystems.records.table).create("ann", auth.new_key())


@pytest.mark.parametrize(
    ("text", "seconds"), [("90", 90), ("15m", 900), ("12h", 43200), ("1d", 86400), ("2w", 1209600)]
)
def test_durations(text, seconds):
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "soon", "-1d", "0", "31d", "1y", "1.5h"])
def test_bad_durations_are_refused(text):
    with pytest.raises(BadRequestError):
        parse_duration(text)


def test_lifecycle_of_a_share(moto_filesystems, owner):
    shares = Shares(moto_filesystems.records.table)
    made = shares.create(owner, "/a.txt", "0" * 64, 3600)
    assert len(made.id) == 32 and shares.get(made.id).path == "/a.txt"
    assert [s.id for s in shares.list(owner)] == [made.id] and shares.list("u-2") == []
    shares.count_download(made, 10)
    shares.count_download(made, 10)
    assert shares.get(made.id).bytes_served == 20 and shares.served(owner) == {
        "downloads": 2,
        "bytes_served": 20,
    }
    with pytest.raises(NotFoundError):
        shares.revoke("u-2", made.id)  # not the owner's: as if it did not exist
    assert shares.revoke(owner, made.id).state() == "revoked"
    with pytest.raises(GoneError):
        shares.get(made.id)


def test_unknown_and_malformed_tokens(moto_filesystems):
    shares = Shares(moto_filesystems.records.table)
    with pytest.raises(NotFoundError):
        shares.get("A" * 32)
    with pytest.raises(BadRequestError):
        shares.get("../../etc/passwd")


def test_links_of_a_disabled_owner_are_gone(moto_filesystems, owner):
    shares, users = Shares(moto_filesystems.records.table), Users(moto_filesystems.records.table)
    made = shares.create(owner, "/a.txt", "0" * 64, 3600)
    users.set_disabled("ann", True)
    with pytest.raises(GoneError):
        shares.get(made.id)
    users.set_disabled("ann", False)
    assert shares.get(made.id).id == made.id


def test_expired_share_is_gone(moto_filesystems, monkeypatch, owner):
    shares = Shares(moto_filesystems.records.table)
    made = shares.create(owner, "/a.txt", "0" * 64, 1)
    assert made.state(now=made.expires + 1) == "expired"
    with pytest.raises(GoneError):
        monkeypatch.setattr("hycloud_core.store.shares.time.time", lambda: made.expires + 1)
        shares.get(made.id)
