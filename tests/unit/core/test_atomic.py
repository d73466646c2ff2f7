"""atomic_write / atomic_open: the old bytes or the new, never a mix, and no temporary left."""

from __future__ import annotations

import threading

import pytest

from hycloud_core.atomic import TMP_PREFIX, atomic_open, atomic_write


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path):
    target = tmp_path / "outcome.json"
    atomic_write(target, "old")
    with pytest.raises(ValueError), atomic_open(target, "w") as out:
        out.write("half of the new")
        raise ValueError("the stream was not what it claimed")
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["outcome.json"]


def test_two_writers_of_one_file_at_once_never_mix(tmp_path):
    """Two runs of one job (a retried invocation) write the same staging file together: each
    temporary is its own, so the file is one writer's bytes whole (a shared `.tmp` name mixed them)."""
    target = tmp_path / "delta"
    payloads = [bytes([n]) * 3_000_000 for n in (1, 2)]
    start = threading.Barrier(2)

    def write(data: bytes) -> None:
        start.wait()
        for _ in range(5):
            with atomic_open(target) as out:
                for i in range(0, len(data), 65536):
                    out.write(data[i : i + 65536])

    threads = [threading.Thread(target=write, args=(p,)) for p in payloads]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert target.read_bytes() in payloads
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(TMP_PREFIX)]
