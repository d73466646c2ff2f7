"""`hycloud mount DIR` (FUSE): a tree copied in and back out byte-exact, and checked through the API."""

from __future__ import annotations

import hashlib
import os
import random
import subprocess
import uuid
from pathlib import Path

import pytest

from hycloud_core import content
from tests.e2e.mounting import CANNOT_MOUNT, start_mount

MiB = 1024 * 1024
SIZES = {  # relative path -> size: empty, tiny, small, just above the small-file threshold, large
    "empty": 0,
    "one byte": 1,
    "a/notes.txt": 1000,
    "a/b/c/deep.bin": 100_000,
    "a/b/edge.bin": 2 * MiB + 1,
    "big/large.bin": 5 * MiB + 3,
}
TREE = f"mounted-{uuid.uuid4().hex[:8]}"  # alice is shared: other tests have their own /tree
pytestmark = pytest.mark.skipif(CANNOT_MOUNT is not None, reason=CANNOT_MOUNT or "")


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def mounted(alice, tmp_path_factory):
    """`hycloud mount` as a user runs it; unmounted with fusermount3 and its process awaited."""
    mount = start_mount(alice, tmp_path_factory.mktemp("mount"))
    yield mount.dir
    mount.stop()


@pytest.fixture(scope="module")
def tree(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("src") / "tree"
    rng = random.Random(41)
    for rel, size in SIZES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(rng.randbytes(size))
    (root / "empty dir").mkdir()
    return root


def _fsync(path: Path) -> None:
    """The mount's writes are local until flushed: fsync returns once the file is in the cloud."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def test_tree_in_and_out_byte_exact(mounted, tree, alice, tmp_path):
    subprocess.run(["cp", "-r", str(tree), str(mounted / TREE)], check=True, timeout=120)
    for rel in SIZES:
        _fsync(mounted / TREE / rel)
    _fsync(mounted / TREE / "empty dir")  # a folder with no file reaches the cloud on fsync (or unmount)
    back = tmp_path / "back"
    subprocess.run(["cp", "-r", str(mounted / TREE), str(back)], check=True, timeout=120)
    for rel in SIZES:
        assert _sha(back / rel) == _sha(tree / rel), rel
    assert (back / "empty dir").is_dir() and not any((back / "empty dir").iterdir())
    sdk = alice.sdk()
    for rel, size in SIZES.items():
        info = sdk.stat(f"/{TREE}/{rel}")
        assert info["size"] == size, rel
        if info["storage"] == "large":
            assert info["content_hash"] == content.hash_file(tree / rel)[0], rel
        else:
            assert hashlib.sha256(sdk.get_bytes(f"/{TREE}/{rel}")).hexdigest() == _sha(tree / rel), rel
    assert sdk.stat(f"/{TREE}/big/large.bin")["storage"] == "large"
    assert sdk.stat(f"/{TREE}/empty dir")["type"] == "dir"


def test_random_reads_and_updates_through_the_mount(mounted, tree, alice):
    local = (tree / "big/large.bin").read_bytes()
    with open(mounted / TREE / "big/large.bin", "rb") as f:
        for offset in (4 * MiB + 17, 10, 5 * MiB - 5, 8 * MiB):
            f.seek(offset)
            assert f.read(70_000) == local[offset : offset + 70_000]
    with open(mounted / TREE / "a/notes.txt", "ab") as f:  # update in place: in the cloud after fsync
        f.write(b"appended")
        f.flush()
        os.fsync(f.fileno())
    expected = (tree / "a/notes.txt").read_bytes() + b"appended"
    assert alice.sdk().get_bytes(f"/{TREE}/a/notes.txt") == expected
    os.rename(mounted / TREE / "a/notes.txt", mounted / TREE / "one byte")  # replaces, as POSIX rename does
    assert alice.sdk().get_bytes(f"/{TREE}/one byte") == expected
    os.unlink(mounted / TREE / "one byte")
    assert not (mounted / TREE / "one byte").exists()
    with pytest.raises(OSError) as err:
        os.rmdir(mounted / TREE / "a")
    assert err.value.errno == 39  # ENOTEMPTY
