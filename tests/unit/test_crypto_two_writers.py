"""Two devices writing into one encrypted folder at once (client/hycloud/encrypted/commit.py):
one device's put runs whole between the other's reads and its writes, as two `hycloud crypt
sync` runs overlap. Nothing either was told it stored is lost, a file's map entry and manifest
agree, and neither device (nor a new one) then sees a rollback."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

import pytest

from hycloud.encrypted import EncryptedFolder, MemoryStore, download, upload
from hycloud.encrypted.counters import Counters
from hycloud_core.crypto import manifest
from hycloud_core.crypto.keys import KdfParams
from hycloud_core.errors import ConflictError

CHEAP = KdfParams(n=2**10)


class RacingStore(MemoryStore):
    """Runs `meanwhile` once, just before the first write that names versions (a put's commit)."""

    def __init__(self) -> None:
        super().__init__()
        self.meanwhile: Callable[[], None] | None = None

    def write_many(self, blobs: Mapping[str, bytes], expect: Mapping[str, str] | None = None) -> set[str]:
        if expect and self.meanwhile:
            run, self.meanwhile = self.meanwhile, None
            run()
        return super().write_many(blobs, expect)


def _device(store: MemoryStore) -> EncryptedFolder:
    return EncryptedFolder.open(store, "alice", b"pw", Counters())


def _file(tmp_path: Path, name: str, data: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


@pytest.fixture
def store() -> RacingStore:
    racing = RacingStore()
    EncryptedFolder.create(racing, "alice", b"pw", CHEAP, Counters())
    return racing


def _read(folder: EncryptedFolder, rel: str, tmp_path: Path) -> bytes:
    out = tmp_path / "read" / rel
    download.get(folder, rel, out)
    return out.read_bytes()


def test_files_two_devices_add_to_one_folder_at_once_are_both_kept(store, tmp_path):
    phone, laptop = _device(store), _device(store)
    upload.put_file(phone, _file(tmp_path, "seed", b"seed"), "docs/seed.txt")
    store.meanwhile = lambda: upload.put_file(laptop, _file(tmp_path, "b", b"from the laptop"), "docs/b.txt")
    upload.put_file(phone, _file(tmp_path, "a", b"from the phone"), "docs/a.txt")
    reader = _device(store)
    assert sorted(e["name"] for e in reader.ls("docs")) == ["a.txt", "b.txt", "seed.txt"]
    assert _read(reader, "docs/a.txt", tmp_path) == b"from the phone"
    assert _read(reader, "docs/b.txt", tmp_path) == b"from the laptop"
    for device in (phone, laptop):  # each device's own counters see no rollback
        assert {e["name"] for e in device.ls("docs")} == {"a.txt", "b.txt", "seed.txt"}


def test_the_same_file_written_by_two_devices_at_once_ends_as_the_last_writers(store, tmp_path):
    phone, laptop = _device(store), _device(store)
    upload.put_file(phone, _file(tmp_path, "v1", b"version one"), "f.txt")
    laptop.ls()  # the laptop has seen version one
    store.meanwhile = lambda: upload.put_file(laptop, _file(tmp_path, "lap", b"the laptop's edit"), "f.txt")
    upload.put_file(phone, _file(tmp_path, "ph", b"the phone's edit"), "f.txt")
    for device in (_device(store), phone, laptop):
        (entry,) = [e for e in device.ls() if e["name"] == "f.txt"]
        assert _read(device, "f.txt", tmp_path) == b"the phone's edit"
        assert entry["size"] == len(b"the phone's edit")


def test_a_folder_that_never_stops_changing_is_a_clear_conflict(store, tmp_path):
    phone, laptop = _device(store), _device(store)
    count = iter(range(100))

    def another_write() -> None:
        upload.put_file(laptop, _file(tmp_path, "x", f"laptop {next(count)}".encode()), "busy.txt")
        store.meanwhile = another_write  # and again before every later commit of the phone's

    store.meanwhile = another_write
    with pytest.raises(ConflictError) as refused:
        upload.put_file(phone, _file(tmp_path, "p", b"phone"), "busy.txt")
    assert refused.value.code == "version-mismatch"
    assert _read(_device(store), "busy.txt", tmp_path).startswith(b"laptop ")


def test_a_manifest_left_by_a_writer_that_stopped_before_its_map_is_written_past(store, tmp_path):
    """A put that stored its manifest and stopped before the map named it: the next put of that
    name finds a manifest where it expected none, reads it, and writes a later version."""
    phone, stopped = _device(store), _device(store)
    upload.put_file(stopped, _file(tmp_path, "s", b"never named"), "new.txt")
    left = store.objects[phone.stored("new.txt")]
    (root, counter), *_ = phone.read_maps([""]).values()
    del root.entries["new.txt"]  # the stopped put's map, as if never written
    store.objects[phone.map_path("")] = manifest.seal(
        phone.keys, manifest.FOLDER, "", counter + 1, root.to_json()
    )
    upload.put_file(phone, _file(tmp_path, "p", b"the phone's new file"), "new.txt")
    assert manifest.counter_of(store.objects[phone.stored("new.txt")]) > manifest.counter_of(left)
    assert _read(_device(store), "new.txt", tmp_path) == b"the phone's new file"
