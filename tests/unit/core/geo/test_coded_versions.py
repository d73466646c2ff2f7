"""A retained coded version keeps its layout beside its hash: its blocks are its only copy."""

from hycloud_core.coded.sweep import linked_blocks
from hycloud_core.linkfile import LinkFile

LAYOUT = {"n": 3, "k": 2, "chunk_size": 4, "chunks": [{"blocks": [{"hash": "b1"}, {"hash": "b2"}]}]}


def test_a_superseded_coded_version_keeps_its_layout_until_it_expires():
    coded = LinkFile(content_hash="old", size=4, mtime=0, erasure=LAYOUT)
    plain = coded.superseded_by("new", 4, 1, keep_s=100, now=10)
    assert plain.erasure is None and plain.history_erasure == {"old": LAYOUT}
    later = plain.superseded_by("newer", 4, 2, keep_s=100, now=200)  # "old" expired at 110
    assert [h for h, _ in later.history] == ["new"] and later.history_erasure == {}


def test_the_sweep_keeps_the_blocks_of_retained_coded_versions(tmp_path):
    link = LinkFile(content_hash="old", size=4, mtime=0, erasure=LAYOUT).superseded_by("new", 4, 1, 100, 10)
    host = tmp_path / "u" / "f.bin"
    host.parent.mkdir()
    host.write_bytes(link.to_bytes())
    host.chmod(0o1640)
    assert linked_blocks(str(tmp_path)) == {"b1", "b2"}


def _link_at(host, layout) -> None:
    host.parent.mkdir(parents=True)
    host.write_bytes(LinkFile(content_hash="c", size=4, mtime=0, erasure=layout).to_bytes())
    host.chmod(0o1640)


def test_the_sweep_keeps_the_blocks_of_trashed_and_snapshotted_coded_files(tmp_path):
    """A coded file in a user's trash or in a snapshot has no other copy of its blocks: restoring
    it must find them (the collector keeps a large file's object there for the same reason)."""

    def layout(*hashes: str) -> dict:
        return {**LAYOUT, "chunks": [{"blocks": [{"hash": h} for h in hashes]}]}

    _link_at(tmp_path / "ns" / "u" / "live.bin", layout("live"))
    _link_at(tmp_path / "trash" / "u" / "1764400000000-0a1b2c3d" / "gone.bin", layout("trashed"))
    _link_at(tmp_path / "snapshots" / "u" / "s1" / "kept.bin", layout("snapshotted"))
    assert linked_blocks(str(tmp_path / "ns")) == {"live", "trashed", "snapshotted"}


def test_the_sweep_keeps_the_blocks_a_kept_version_record_names_until_it_expires(moto_filesystems):
    """Once the file is gone and its trash emptied, the version record alone names the layout."""
    from hycloud_core.coded.sweep import version_blocks
    from hycloud_core.store.version_records import VersionRecord, VersionRecords

    table = moto_filesystems.records.table
    records = VersionRecords(table, "u")
    for digest, expires, hashes in (("kept", 2000.0, ("b1", "b2")), ("expired", 500.0, ("b3",))):
        layout = {**LAYOUT, "chunks": [{"blocks": [{"hash": h} for h in hashes]}]}
        records.put(
            VersionRecord(
                "/f", f"v-{digest}", "large", digest, 4, 0.0, "u", 0.0, "delete", expires, erasure=layout
            )
        )
    assert version_blocks(table, now=1000.0) == {"b1", "b2"}
