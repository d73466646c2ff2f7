"""The automatic transfer mode: eq. 2 for downloads, and the client's version and rate store."""

from __future__ import annotations

import os
import threading

import pytest

from hycloud.transfer import auto, background, plan
from hycloud.versions import VersionStore
from hycloud_core.delta import should_delta_download
from hycloud_core.delta.decision import delta_upload_threshold

MB = 1e6


def test_download_rule_without_overhead_is_eq2():
    r_c, r_t, gamma = 80 * MB, 100 * MB, 0.95
    threshold = delta_upload_threshold(r_c, r_t, gamma)
    assert should_delta_download(10**8, threshold * 0.99, r_c, r_t, gamma)
    assert not should_delta_download(10**8, threshold * 1.01, r_c, r_t, gamma)


def test_overhead_keeps_small_files_direct():
    assert should_delta_download(10**9, 6 * MB, 150 * MB, 100 * MB, 0.99, overhead_s=1.0)
    assert not should_delta_download(3 * 10**6, 6 * MB, 150 * MB, 100 * MB, 0.99, overhead_s=1.0)


def test_rates_are_per_endpoint_and_the_median_of_recent_ones(tmp_path):
    a = VersionStore("http://a", "key", tmp_path / "s.sqlite3")
    b = VersionStore("http://b", "key", tmp_path / "s.sqlite3")
    for rate in (1.0, 100.0, 3.0, 4.0, 5.0):
        a.add_rate("down", rate)
    assert a.rate("down") == 4.0 and b.rate("down") is None
    for rate in range(1, 30):
        a.add_rate("down", float(rate))
    assert a.rate("down") == pytest.approx(sum(range(22, 30)) / 8, abs=1)  # only the recent ones
    a.add_rate("compute", 7.0)
    assert b.rate("compute") == 7.0  # the machine's compute rate is shared


def test_version_record_matches_only_the_unchanged_file(tmp_path):
    store = VersionStore("http://a", "key", tmp_path / "s.sqlite3")
    f = tmp_path / "f"
    f.write_bytes(b"one")
    store.remember("/x", "h1", f, None)
    assert store.get("/x").matches(f) and store.get("/y") is None
    store.set_signature("/x", "h1", b"sig")
    assert store.get("/x").signature == b"sig"
    store.set_signature("/x", "other", b"nope")
    assert store.get("/x").signature == b"sig"
    f.write_bytes(b"two!")
    assert not store.get("/x").matches(f)
    assert VersionStore("http://a", "other-key", tmp_path / "s.sqlite3").get("/x") is None


def test_a_version_keeps_the_files_chunk_state_for_its_own_version_only(tmp_path):
    store, f = VersionStore("http://a", "key", tmp_path / "s.sqlite3"), tmp_path / "f"
    f.write_bytes(b"one")
    store.remember("/x", "h1", f, None, {"1024": 0.5, "2048": 0.5})
    assert store.get("/x").chunk_state == {"1024": 0.5, "2048": 0.5}
    store.set_chunk_state("/x", "h1", {"4096": 1.0})
    store.set_chunk_state("/x", "other", {"8192": 1.0})  # a version no longer held: ignored
    assert store.get("/x").chunk_state == {"4096": 1.0}


def test_a_store_made_before_chunk_states_gains_their_column_and_keeps_its_versions(tmp_path):
    import sqlite3

    path, f = tmp_path / "s.sqlite3", tmp_path / "f"
    f.write_bytes(b"one")
    with sqlite3.connect(path) as db:  # the layout stores had before
        db.execute(
            "CREATE TABLE versions (endpoint TEXT, user TEXT, remote TEXT, content_hash TEXT, local TEXT,"
            " mtime_ns INTEGER, size INTEGER, signature BLOB, at REAL, PRIMARY KEY (endpoint, user, remote))"
        )
    old = VersionStore("http://a", "key", path)
    old.remember("/x", "h1", f, b"sig")
    assert old.get("/x").signature == b"sig" and old.get("/x").chunk_state is None
    old.remember("/x", "h2", f, None, {"2048": 1.0})
    assert VersionStore("http://a", "key", path).get("/x").chunk_state == {"2048": 1.0}


def test_concurrent_writers_lose_nothing(tmp_path):
    path = tmp_path / "s.sqlite3"

    def write(i: int) -> None:
        store = VersionStore("http://a", "key", path)
        f = tmp_path / f"f{i}"
        f.write_bytes(os.urandom(8))
        for j in range(20):
            store.remember(f"/p{i}-{j}", f"h{i}", f, b"s" * 100)
            store.add_rate("up", float(i + 1))

    threads = [threading.Thread(target=write, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    store = VersionStore("http://a", "key", path)
    assert all(store.get(f"/p{i}-{j}").content_hash == f"h{i}" for i in range(6) for j in range(20))


def test_an_unwritable_place_means_no_memory_not_an_error(tmp_path):
    (tmp_path / "file").write_bytes(b"")
    store = VersionStore("http://a", "key", tmp_path / "file" / "s.sqlite3")
    assert not store.enabled
    store.add_rate("down", 5.0)
    assert store.get("/x") is None and store.rate("down") is None


def test_mode_choice(tmp_path):
    store = VersionStore("http://a", "key", tmp_path / "s.sqlite3")
    slow = auto.rates(store)
    assert plan.eq2_choice(200 * 2**20, slow, has_base=True) == "delta"
    assert plan.eq2_choice(200 * 2**20, slow, has_base=False) == "direct"
    store.add_rate("relay_down", slow.down * 2)
    assert plan.eq2_choice(200 * 2**20, auto.rates(store), has_base=False) == "relay"
    for _ in range(8):
        store.add_rate("down", 10e9)  # a link faster than computing a delta
    assert plan.eq2_choice(200 * 2**20, auto.rates(store), has_base=True) != "delta"
    assert auto.upload_pays(200 * 2**20, 2**20, slow) and not auto.upload_pays(200 * 2**20, 200 * 2**20, slow)


def test_get_of_a_file_already_held_transfers_nothing(tmp_path, monkeypatch):
    """A local copy with the remote's content but no record: the delta path finds them equal."""
    from hycloud.sdk import HyCloud
    from hycloud.transfer import delta as transfer_delta

    monkeypatch.setenv("HYCLOUD_STATE", str(tmp_path / "s.sqlite3"))
    local = tmp_path / "f"
    local.write_bytes(b"x" * 100)
    sdk = HyCloud("http://unused", "key")
    link = {"path": "/f", "content_hash": "h", "size": 100}
    monkeypatch.setattr(sdk, "_fetch", lambda path: _LinkResponse(link))
    monkeypatch.setattr(
        transfer_delta,
        "delta_download",
        lambda *a, **k: {"kind": "same", "sent_bytes": 0, "received_bytes": 0},
    )
    monkeypatch.setattr(plan, "eq2_choice", lambda *a: "delta")
    assert sdk.get("/f", local) == local
    assert sdk.last_transfer["mode"] == "delta" and sdk.last_transfer["kind"] == "same"
    background.settle()


class _LinkResponse:
    def __init__(self, link: dict) -> None:
        self.headers = {"Content-Type": "application/vnd.hycloud.link+json"}
        self._link = link

    def json(self) -> dict:
        return self._link


@pytest.mark.parametrize("direction", ["down", "up"])
def test_a_learned_job_predicts_its_own_time_without_counting_its_transfers_twice(tmp_path, direction):
    """The job's start-to-result time already holds its S3<->EFS moves and (download) the cloud's
    delta computation or (upload) the delta crossing the link; eq. 2 charges those on their own."""
    store = VersionStore("http://a", "key", tmp_path / "s.sqlite3")
    store.add_rate("compute", 50 * MB)
    store.add_rate("up", 4 * MB)
    size, delta_size, job_seconds = 16 * 2**20, 200_000, 2.5
    auto.learn_job(store, size, delta_size, {"s3_efs_rate": 40 * MB}, job_seconds, direction)
    r = auto.rates(store)
    gamma = 1 - delta_size / size
    link = r.up if direction == "up" else 1e12  # a download's delta is fetched after the job
    predicted = r.overhead_s + size / r.compute + 2 * size / r.s3_efs + (1 - gamma) * size / link
    client_side = size / r.compute if direction == "up" else 0.0  # the upload computes it first
    assert predicted == pytest.approx(job_seconds + client_side, rel=0.02)


def test_a_job_faster_than_its_charges_leaves_a_small_positive_overhead(tmp_path):
    store = VersionStore("http://a", "key", tmp_path / "s.sqlite3")
    store.add_rate("compute", 50 * MB)
    auto.learn_job(store, 10**9, 10**6, {}, 0.5, "down")
    assert 0 < auto.rates(store).overhead_s <= 0.2


def test_a_store_opened_while_another_holds_the_lock_waits_for_it(tmp_path, monkeypatch):
    """Stores made side by side on a new file: SQLite answers one `database is locked` at once
    (no busy wait while the journal mode changes), and that store used to be off for good,
    dropping every version it was told (the concurrent writers test lost 20 of 120 so)."""
    import sqlite3

    real, locked = VersionStore._connect, [True]

    class LockedOnce:
        def __init__(self, db):
            self.db = db

        def execute(self, sql, *args):
            if locked[0]:
                locked[0] = False
                raise sqlite3.OperationalError("database is locked")
            return self.db.execute(sql, *args)

        def executescript(self, script):
            return self.db.executescript(script)

        def close(self):
            self.db.close()

        def __enter__(self):
            self.db.__enter__()
            return self

        def __exit__(self, *exc):
            return self.db.__exit__(*exc)

    monkeypatch.setattr(VersionStore, "_connect", lambda self: LockedOnce(real(self)))
    store = VersionStore("http://a", "key", tmp_path / "s.sqlite3")
    assert store.enabled and not locked[0]
