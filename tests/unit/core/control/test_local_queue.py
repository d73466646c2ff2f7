from hycloud_core.control.elimination import LocalOp
from hycloud_core.control.fop import OpKind
from hycloud_core.control.local_queue import JOURNAL_NAME, LocalOperationQueue, link_congested


def ids(ops):
    return [op.op_id for op in ops]


def test_passes_through_when_nothing_is_congested(tmp_path):
    queue = LocalOperationQueue(tmp_path)
    op = LocalOp("1", OpKind.MKDIR, "/d")
    assert queue.submit(op) == [op]
    assert not (tmp_path / JOURNAL_NAME).exists()


def test_holds_merges_and_flushes_a_batch_when_the_bottleneck_clears(tmp_path):
    queue = LocalOperationQueue(tmp_path, fsync=False)
    queue.set_congestion(controller_overloaded=True, link_congested=False)
    assert queue.submit(LocalOp("1", OpKind.UPLOAD, "/x", creates=True)) == []
    queue.submit(LocalOp("2", OpKind.UPLOAD, "/x"))
    queue.submit(LocalOp("3", OpKind.MKDIR, "/d"))
    assert queue.ready_batch() == []
    queue.set_congestion(False, link_congested(95.0, 100.0))
    assert queue.ready_batch() == []
    queue.set_congestion(False, link_congested(10.0, 100.0))
    # Still in order behind the queued ones, even though the path is clear now.
    assert queue.submit(LocalOp("4", OpKind.UPLOAD, "/y", creates=True)) == []
    batch = queue.ready_batch()
    assert ids(batch) == ["2", "3", "4"]
    assert batch[0].creates is True


def test_survives_a_restart_including_merges_made_before_it(tmp_path):
    queue = LocalOperationQueue(tmp_path)
    queue.set_congestion(True, False)
    queue.submit(LocalOp("1", OpKind.MKDIR, "/d"))
    queue.submit(LocalOp("2", OpKind.UPLOAD, "/d/f", creates=True, data={"local": "/home/u/f", "size": 7}))
    queue.submit(LocalOp("3", OpKind.UPLOAD, "/e", creates=False))
    queue.submit(LocalOp("4", OpKind.DELETE, "/e"))
    before = queue.pending()
    del queue

    reopened = LocalOperationQueue(tmp_path)
    assert reopened.pending() == before
    assert ids(before) == ["1", "2", "4"]
    assert reopened.pending()[1].data == {"local": "/home/u/f", "size": 7}

    # Merges still work against what was replayed.
    reopened.set_congestion(True, False)
    reopened.submit(LocalOp("5", OpKind.DELETE, "/d/f"))
    reopened.submit(LocalOp("6", OpKind.RMDIR, "/d"))
    assert ids(reopened.pending()) == ["4"]
    assert ids(LocalOperationQueue(tmp_path).pending()) == ["4"]


def test_confirm_compacts_and_a_torn_last_line_is_ignored(tmp_path):
    queue = LocalOperationQueue(tmp_path)
    queue.set_congestion(False, True)
    for i, path in enumerate(["/a", "/b", "/c"]):
        queue.submit(LocalOp(str(i), OpKind.MKDIR, path))
    queue.confirm(["0", "1"])
    journal = tmp_path / JOURNAL_NAME
    assert len(journal.read_text().splitlines()) == 1
    with journal.open("a") as fh:
        fh.write('{"push": {"op_id": "9", "kind": "mk')  # crash mid-write
    reopened = LocalOperationQueue(tmp_path)
    assert ids(reopened.pending()) == ["2"]
    reopened.set_congestion(False, True)
    reopened.submit(LocalOp("3", OpKind.MKDIR, "/z"))  # appended after the repaired journal
    assert ids(LocalOperationQueue(tmp_path).pending()) == ["2", "3"]
