"""The failover journal on disk: what one run journaled a later run (or one after a kill) reads
back, whole and in order; entries go once replayed or once the standby is in step past them."""

from __future__ import annotations

import subprocess
import sys
import time

from hycloud.failover_journal import CLOCK_MARGIN_S, Journal, scope_of


def put(journal: Journal, path: str, data: bytes) -> None:
    journal.record("PUT", "/v1/files", {"params": {"path": path, "parents": "true"}, "data": data})


def test_a_later_journal_of_the_same_file_reads_what_an_earlier_one_recorded(tmp_path):
    path, scope = tmp_path / "j.sqlite3", scope_of("http://p/", "key")
    first = Journal(path, scope)
    put(first, "/a/x.txt", b"\x00bytes\xff")
    first.record("POST", "/v1/dirs", {"json": {"path": "/a/b", "parents": True}})
    first.record_upload("/tmp/big.bin", "/a/big.bin", "c" * 64, {"mtime": "1.5"})
    later = Journal(path, scope)
    got = later.take()
    assert [(c.method, c.route) for c in got] == [
        ("PUT", "/v1/files"),
        ("POST", "/v1/dirs"),
        ("UPLOAD", "/a/big.bin"),
    ]
    assert got[0].kwargs == {"params": {"path": "/a/x.txt", "parents": "true"}, "data": b"\x00bytes\xff"}
    assert got[0].expected_leaf() is not None and got[2].kwargs["content_hash"] == "c" * 64
    assert Journal(path, scope_of("http://p", "other-key")).take() == []  # another key's rows are not ours


def test_a_killed_process_leaves_its_acknowledged_entries(tmp_path):
    path = tmp_path / "j.sqlite3"
    code = (
        "import os; from hycloud.failover_journal import Journal\n"
        f"j = Journal({str(path)!r}, 's')\n"
        "j.record('PUT', '/v1/files', {'params': {'path': '/k'}, 'data': b'kept'})\n"
        "os.kill(os.getpid(), 9)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=60)
    assert done.returncode == -9, done.stderr
    (change,) = Journal(path, "s").take()
    assert change.kwargs["data"] == b"kept"


def test_entries_go_once_replayed_or_once_the_standby_is_in_step_past_them(tmp_path):
    journal = Journal(tmp_path / "j.sqlite3", "s")
    put(journal, "/old", b"1")
    put(journal, "/new", b"2")
    old, new = journal.take()
    journal.in_step_at(old.at + CLOCK_MARGIN_S + 0.0001)  # a pass that started after /old was written
    assert [c.kwargs["params"]["path"] for c in journal.take()] == ["/new"]
    journal.done([new])
    assert journal.take() == [] and len(journal) == 0
    journal.in_step_at(time.time())  # nothing left to drop


def test_a_streamed_body_is_listed_as_unreplayable(tmp_path):
    journal = Journal(tmp_path / "j.sqlite3", "s")
    journal.record("PUT", "/v1/files", {"params": {"path": "/s"}, "data": iter([b"x"])})
    journal.record("POST", "/v1/shares", {"json": {"path": "/s"}})
    assert journal.take() == []
    assert [what for _, what in journal.unreplayable] == ["PUT /v1/files", "POST /v1/shares"]
