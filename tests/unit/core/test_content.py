"""Content hash: the streaming hasher agrees with the one-shot hash at every part boundary."""

import hashlib
import os
import signal
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hycloud_core import content


@given(st.binary(max_size=3000), st.lists(st.integers(1, 700), max_size=20))
@settings(max_examples=100, deadline=None)
def test_part_hasher_matches_hash_of_whole_bytes(data, cuts):
    """With a pool too: whole parts hashed on its threads, pieces across boundaries kept in order."""
    from concurrent.futures import ThreadPoolExecutor

    from hycloud_core import content

    old = content.PART_SIZE
    content.PART_SIZE = 256  # small parts so the property covers many part boundaries
    try:
        with ThreadPoolExecutor(2) as pool:
            for hasher in (content.PartHasher(), content.PartHasher(pool)):
                at = 0
                for cut in cuts:
                    hasher.update(data[at : at + cut])
                    at += cut
                hasher.update(data[at:])
                assert hasher.hexdigest() == content.hash_bytes(data)
    finally:
        content.PART_SIZE = old


@pytest.mark.parametrize(
    "size", [0, 1, content.PART_SIZE - 1, content.PART_SIZE, content.PART_SIZE + 1, 5 * content.PART_SIZE + 7]
)
def test_a_files_parts_hashed_on_the_pool_are_the_parts_hashed_in_a_row(tmp_path, size):
    data = os.urandom(size)
    (tmp_path / "f").write_bytes(data)
    in_a_row = [
        hashlib.sha256(data[i : i + content.PART_SIZE]).digest()
        for i in range(0, max(size, 1), content.PART_SIZE)
    ]
    assert content.hash_file(tmp_path / "f") == (content.hash_bytes(data), in_a_row)
    assert content.hash_file_and_sha256(tmp_path / "f") == (
        content.hash_bytes(data),
        in_a_row,
        hashlib.sha256(data).hexdigest(),
    )


def test_a_forked_child_hashes_with_a_pool_of_its_own(tmp_path):
    data = os.urandom(3 * content.PART_SIZE)
    (tmp_path / "f").write_bytes(data)
    content.hash_file(tmp_path / "f")  # the parent's pool exists now
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child reports by its exit status only
        os._exit(0 if content.hash_file(tmp_path / "f")[0] == content.hash_bytes(data) else 1)
    deadline = time.monotonic() + 30
    while (done := os.waitpid(pid, os.WNOHANG)) == (0, 0) and time.monotonic() < deadline:
        time.sleep(0.05)
    if done == (0, 0):  # hung on the parent's pool, whose threads it does not have
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        pytest.fail("the forked child's hash never ended")
    assert os.waitstatus_to_exitcode(done[1]) == 0
