"""A delta upload's version is acknowledged once verified and on EFS, and settles in S3 after
(hycloud_core/fs/settle.py; the README's "Job paths"): its record has no S3 key meanwhile, readers of its object wait for
it, and its relay-cache copy, the only one, is never evicted until it has settled."""

from __future__ import annotations

import os
import threading
import time

import pytest

from hycloud_core import content
from hycloud_core.fs.relay_cache import IN_USE_S, RelayCache
from hycloud_core.fs.settle import SettleFailed, settle, settle_late
from hycloud_core.store import objects as objects_mod
from hycloud_core.store.objects import Settling
from tests.conftest import MOTO_BUCKET

DATA = b"settling " * 1000
H = content.hash_bytes(DATA)


def test_a_settling_record_names_no_object_until_it_has_settled(moto_filesystems):
    objects = moto_filesystems.objects
    objects.create(H, len(DATA), settling=True)
    record = objects.get(H)
    assert "settling" in record and "s3_key" not in record and objects.is_stored(H)
    objects.settled(H)
    record = objects.get(H)
    assert "settling" not in record and record["s3_key"] == content.object_key(H)


def test_a_reader_of_a_settling_version_gets_its_url_once_it_has_settled(moto_filesystems):
    fs = moto_filesystems.fs("u-1")
    fs.commit_stored("/big.bin", H, len(DATA), sha256="0" * 64, settling=True)
    assert fs.ns.read_link("/big.bin").settling

    def settle_soon() -> None:
        time.sleep(0.3)
        moto_filesystems.s3.put_object(Bucket=MOTO_BUCKET, Key=content.object_key(H), Body=DATA)
        moto_filesystems.objects.settled(H)

    settler = threading.Thread(target=settle_soon)
    started = time.monotonic()
    settler.start()
    answer = fs.download_link("/big.bin")
    settler.join()
    assert time.monotonic() - started >= 0.3  # it waited for the object to be there
    assert answer["content_hash"] == H and content.object_key(H) in answer["url"]


def test_a_version_that_does_not_settle_in_time_is_a_503_to_try_again(moto_filesystems, monkeypatch):
    fs = moto_filesystems.fs("u-1")
    fs.commit_stored("/big.bin", H, len(DATA), settling=True)
    monkeypatch.setattr(objects_mod, "SETTLE_WAIT_S", 0.2)
    with pytest.raises(Settling) as err:
        fs.download_link("/big.bin")
    assert err.value.status == 503 and err.value.code == "settling"


def test_a_later_version_at_the_path_is_not_marked_settling(moto_filesystems):
    fs = moto_filesystems.fs("u-1")
    fs.commit_stored("/big.bin", H, len(DATA), settling=True)
    other = content.hash_bytes(b"other")
    fs.commit_stored("/big.bin", other, 5)
    assert not fs.ns.read_link("/big.bin").settling


def _cached(cache: RelayCache, name: str, data: bytes, settling: bool = False, age: float = 0) -> None:
    tmp = os.path.join(cache.dir, ".hc-tmp-test")
    with open(tmp, "wb") as f:
        f.write(data)
    cache.publish(name, tmp, content.hash_bytes(data), settling=settling)
    past = time.time() - age
    os.utime(cache.path(name), (past, past))


def test_a_settling_copy_is_never_evicted_and_is_evicted_once_settled(tmp_path):
    cache = RelayCache(str(tmp_path))
    _cached(cache, "base#settling", DATA, settling=True, age=IN_USE_S + 60)
    _cached(cache, "idle", b"idle", age=IN_USE_S + 60)
    assert cache.evict(0) == ["idle"]
    assert cache.is_ready("base#settling", H) and cache.is_settling("base#settling")
    cache.settled("base#settling", H)
    past = time.time() - IN_USE_S - 60
    os.utime(cache.path("base#settling"), (past, past))
    assert cache.evict(0) == ["base#settling"]


def test_a_copy_linked_under_a_second_name_survives_the_first_names_eviction(tmp_path):
    cache = RelayCache(str(tmp_path))
    _cached(cache, "base#x", DATA)
    assert cache.link_as("u#f", "base#x", H) and cache.is_ready("u#f", H)
    assert not cache.is_settling("u#f")  # the pinned copy is the content's own name only
    os.unlink(cache.path("base#x"))
    assert open(cache.path("u#f"), "rb").read() == DATA
    assert not cache.link_as("u#g", "base#x", H)  # nothing to link from


def test_upkeep_settles_a_version_whose_settle_job_was_lost_and_only_that_late(moto_filesystems, tmp_path):
    objects, cache = moto_filesystems.objects, RelayCache(str(tmp_path / "cache"))
    objects.create(H, len(DATA), settling=True)
    _cached(cache, f"base#{H}", DATA, settling=True)
    assert settle_late(cache, lambda: objects, time.time(), late_s=300) == []  # its job may still run
    assert settle_late(cache, lambda: objects, time.time() + 301, late_s=300) == [f"base#{H}"]
    body = moto_filesystems.s3.get_object(Bucket=MOTO_BUCKET, Key=content.object_key(H))["Body"].read()
    assert body == DATA and "settling" not in objects.get(H) and not cache.is_settling(f"base#{H}")
    assert settle(cache, objects, f"base#{H}", H) == {"settled": False}  # a second run does nothing


def test_a_cached_copy_that_is_not_the_version_is_never_stored_as_it(moto_filesystems, tmp_path):
    objects, cache = moto_filesystems.objects, RelayCache(str(tmp_path / "cache"))
    objects.create(H, len(DATA), settling=True)
    _cached(cache, f"base#{H}", DATA, settling=True)
    with open(cache.path(f"base#{H}"), "r+b") as f:
        f.write(b"X")  # the bytes changed under the name
    with pytest.raises(SettleFailed):
        settle(cache, objects, f"base#{H}", H)
    listed = moto_filesystems.s3.list_objects_v2(Bucket=MOTO_BUCKET, Prefix=content.object_key(H))
    assert listed.get("KeyCount", 0) == 0 and "settling" in objects.get(H)


def test_a_settling_version_restored_at_a_path_is_marked_settling_there(moto_filesystems):
    fs = moto_filesystems.fs("u-1")
    fs.commit_stored("/big.bin", H, len(DATA), settling=True)
    entry = fs.relink("/restored.bin", H, len(DATA))
    assert entry.content_hash == H and fs.ns.read_link("/restored.bin").settling
    moto_filesystems.objects.settled(H)
    fs.relink("/again.bin", H, len(DATA))
    assert not fs.ns.read_link("/again.bin").settling


def test_a_copy_kept_for_an_upload_whose_commit_failed_is_released_by_the_upkeep(moto_filesystems, tmp_path):
    """No record names the content (its commit failed): the upkeep finds nothing to settle and
    releases the copy; a copy pinned again for a new upload is kept."""
    objects, cache = moto_filesystems.objects, RelayCache(str(tmp_path / "cache"))
    _cached(cache, f"base#{H}", DATA)
    cache.pin(f"base#{H}", H)
    assert cache.is_settling(f"base#{H}")
    assert settle_late(cache, lambda: objects, time.time() + 301, late_s=300) == []
    assert not cache.is_settling(f"base#{H}") and cache.is_ready(f"base#{H}", H)
