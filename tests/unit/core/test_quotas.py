"""Per-user quotas under moto: the counter follows every operation, limits refuse growth, recount repairs."""

from __future__ import annotations

import pytest

from hycloud_core.errors import BadRequestError, ConflictError, ForbiddenError
from hycloud_core.fs import FileSystem, Namespace
from hycloud_core.store.quotas import Change, Limits, Quota
from tests.conftest import MOTO_BUCKET
from tests.unit.large_upload import upload_large


def quota_fs(moto_filesystems, user: str = "u-1", limits: Limits | None = None) -> FileSystem:
    m = moto_filesystems
    quota = Quota(m.records, user, limits or Limits())
    return FileSystem(
        user, Namespace(str(m.root / "ns"), user), m.records, m.objects, m.s3, MOTO_BUCKET, quota=quota
    )


def used(fs: FileSystem) -> tuple[int, int]:
    report = fs.quota.report()
    return report["bytes"]["used"], report["files"]["used"]


def test_counter_follows_writes_copies_moves_and_removals(moto_filesystems):
    fs = quota_fs(moto_filesystems)
    fs.mkdir("/d")
    fs.put_small("/d/a", b"a" * 10, "x")
    fs.put_small("/d/a", b"a" * 4, "x")  # overwrite: -6 bytes, same file
    upload_large(fs, moto_filesystems.s3, MOTO_BUCKET, b"L" * 3000, "/d/big")
    assert used(fs) == (3004, 2)
    fs.copy("/d", "/e")
    assert used(fs) == (6008, 4)
    fs.move("/e/a", "/d/big")  # replaces a large file by a small one
    assert used(fs) == (3008, 3)
    fs.delete("/d/big")
    fs.rmdir("/e", recursive=True)
    assert used(fs) == (4, 1)
    assert fs.quota.recount() == Change(4, 1)


def test_over_limit_is_refused_and_nothing_changes(moto_filesystems):
    fs = quota_fs(moto_filesystems, limits=Limits(bytes=100, files=2))
    fs.put_small("/a", b"a" * 60, "x")
    with pytest.raises(ForbiddenError) as err:
        fs.put_small("/b", b"b" * 60, "x")
    assert err.value.code == "quota-exceeded" and "60 of 100 bytes" in err.value.message
    assert not fs.ns.exists("/b") and fs.records.get_file("u-1", "/b") is None and used(fs) == (60, 1)
    fs.put_small("/a", b"a" * 100, "x")  # growing in place to exactly the limit fits
    with pytest.raises(ForbiddenError):
        fs.copy("/a", "/c")
    assert used(fs) == (100, 1)


def test_failed_operation_gives_its_reservation_back(moto_filesystems):
    fs = quota_fs(moto_filesystems, limits=Limits(bytes=100))
    with pytest.raises(ConflictError):
        fs.put_small("/f", b"f" * 10, "x", expect="0" * 64)  # version check fails after reserving
    assert used(fs) == (0, 0)


def test_own_limits_override_defaults_and_minus_one_is_unlimited(moto_filesystems):
    fs = quota_fs(moto_filesystems, limits=Limits(bytes=5))
    fs.quota.set_limits(max_bytes=-1)
    fs.put_small("/a", b"a" * 50, "x")
    fs.quota.reset_limits()
    assert fs.quota.limits() == Limits(bytes=5) and fs.quota.report()["bytes"] == {"used": 50, "limit": 5}
    with pytest.raises(BadRequestError):
        fs.quota.set_limits(max_files=-2)


def test_limits_from_the_environment(monkeypatch):
    monkeypatch.setenv("HYCLOUD_QUOTA_BYTES", "1000")
    monkeypatch.delenv("HYCLOUD_QUOTA_FILES", raising=False)
    assert Limits.from_env() == Limits(bytes=1000, files=None)
