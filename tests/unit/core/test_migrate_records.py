"""The migration of file records keyed by path (today's deployments) to records keyed by folder
id (store/migrate_records.py, moto): bounded pages, a cursor to resume from, nothing lost or
doubled when a round is cut short, and the app reading and writing both layouts meanwhile."""

from __future__ import annotations

from functools import partial

import pytest

from hycloud_core.store import migrate_records
from hycloud_core.store.dir_index import LAYOUT_SK
from hycloud_core.store.locks import path_leases
from hycloud_core.store.migrate_records import CURSOR, migrate
from hycloud_core.store.old_layout import old_file_key
from hycloud_core.store.records import Records
from tests.conftest import MOTO_TABLE

OLD = {
    "/top.txt": 1,
    "/a/x": 2,
    "/a/y": 3,
    "/a/b/z": 4,
    "/c/d/e/f/deep": 5,
    "/c/d/other": 6,
}


@pytest.fixture
def records(moto_filesystems) -> Records:
    return Records(MOTO_TABLE)


def write_old(records: Records, user: str, files: dict[str, int]) -> None:
    """Records as today's main writes them: keyed by the whole path."""
    with records.table.batch_writer() as batch:
        for path, size in files.items():
            item = {
                **old_file_key(user, path),
                "kind": "small",
                "size": size,
                "sha256": f"h{size}",
                "mtime": 7,
            }
            batch.put_item(Item=item)


def old_keys(records: Records, user: str) -> list[str]:
    items = records.table.scan()["Items"]
    return [i["sk"] for i in items if i["pk"] == f"NS#{user}" and i["sk"].startswith("F#/")]


def listed(records: Records, user: str, path: str = "/") -> dict[str, tuple[int, str, int]]:
    return {r["path"]: (r["size"], r["sha256"], r["mtime"]) for r in records.files_under(user, path)}


EXPECTED = {p: (s, f"h{s}", 7) for p, s in OLD.items()}


def test_before_the_migration_the_old_records_are_read(records):
    write_old(records, "u", OLD)
    assert listed(records, "u") == EXPECTED
    assert records.get_file("u", "/a/b/z")["size"] == 4
    assert listed(records, "u", "/c/d") == {p: v for p, v in EXPECTED.items() if p.startswith("/c/d/")}


def test_bounded_rounds_resume_from_the_cursor_and_convert_every_record(records):
    write_old(records, "u", OLD)
    write_old(records, "v", {"/v1": 9})
    first = migrate(records, ["u", "v"], limit=3)
    assert first.records == 3 and not first.complete
    assert records.table.get_item(Key=CURSOR)["Item"]["user"] == "u"
    assert listed(records, "u") == EXPECTED  # half migrated: both layouts read
    rounds = 1
    while not migrate(records, ["u", "v"], limit=3).complete:
        rounds += 1
    assert rounds <= 4
    assert old_keys(records, "u") == old_keys(records, "v") == []
    assert listed(records, "u") == EXPECTED and listed(records, "v") == {"/v1": (9, "h9", 7)}
    assert records.dirs.migrated("u") and Records(MOTO_TABLE).dirs.migrated("v")
    assert records.table.get_item(Key={"pk": "NS#u", "sk": LAYOUT_SK})["Item"]["version"] == 2


def test_a_round_cut_short_loses_and_doubles_nothing(records, monkeypatch):
    write_old(records, "u", OLD)
    real, done = migrate_records._convert, []

    def crash_after_two(*args):
        if len(done) == 2:
            raise RuntimeError("the function timed out")
        done.append(real(*args))
        return done[-1]

    monkeypatch.setattr(migrate_records, "_convert", crash_after_two)
    with pytest.raises(RuntimeError):
        migrate(records, ["u"], limit=100)
    assert len(old_keys(records, "u")) == len(OLD) - 2 and listed(records, "u") == EXPECTED
    monkeypatch.setattr(migrate_records, "_convert", real)
    assert migrate(records, ["u"], limit=100).complete
    assert old_keys(records, "u") == [] and listed(records, "u") == EXPECTED
    assert len([i for i in records.table.scan()["Items"] if i["sk"].startswith("F#")]) == len(OLD)


def test_writes_moves_and_removals_meanwhile_work_on_both_layouts(records):
    write_old(records, "u", OLD)
    records.put_file("u", "/a/x", kind="small", size=20, sha256="new", mtime=8)  # replaces the old record
    records.rewrite_subtree("u", "/c", "/moved")  # old records below /c converted as they move
    records.delete_file("u", "/top.txt")
    records.to_trash("u", "/a/b", "0001-item")
    want = {"/a/x": (20, "new", 8), "/a/y": (3, "h3", 7), "/moved/d/e/f/deep": (5, "h5", 7)}
    want["/moved/d/other"] = (6, "h6", 7)
    assert listed(records, "u") == want
    assert old_keys(records, "u") == ["F#/a/y"]
    assert migrate(records, ["u"]).complete and listed(records, "u") == want


def test_a_busy_folder_is_left_for_the_next_round(records, monkeypatch):
    write_old(records, "u", {"/a/x": 1})
    monkeypatch.setattr(migrate_records, "path_leases", partial(path_leases, wait_s=0.1))
    with path_leases(records.table, "u", ["/a/x"]):  # a write in progress below the folder
        busy = migrate(records, ["u"])
    assert busy.busy == ["u"] and not busy.complete and old_keys(records, "u") == ["F#/a/x"]
    assert migrate(records, ["u"]).complete and listed(records, "u") == {"/a/x": (1, "h1", 7)}


def test_a_round_with_no_namespace_reads_no_table():
    """A data instance's upkeep runs the round too: its EFS holds no namespace, and its role may not
    read the home table (the local cloud refuses it as AWS would)."""

    class NoTable:
        def __getattr__(self, name):
            raise AssertionError(f"the table was used: {name}")

    records = Records.over(NoTable())
    assert migrate(records, []).complete
