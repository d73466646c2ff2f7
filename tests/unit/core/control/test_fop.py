import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hycloud_core.control import fop
from hycloud_core.control.fop import FopQueue, Operation, OpKind

PATHS = ["/a", "/a/b", "/a/b/c", "/a/d", "/e", "/e/f", "/g"]


def drain(queue: FopQueue) -> list[str]:
    order = []
    while (op := queue.next_ready()) is not None:
        order.append(op.op_id)
        queue.ack(op.op_id)
    return order


def test_priority_is_arrival_plus_transfer_time():
    op = Operation("x", OpKind.DOWNLOAD, "/f", arrival=10.0, size=1000)
    assert fop.fop_priority(op, seconds_per_byte=0.01) == pytest.approx(20.0)
    mkdir = Operation("y", OpKind.MKDIR, "/d", arrival=10.0)
    assert fop.fop_priority(mkdir, seconds_per_byte=0.01, directory_seconds=0.5) == pytest.approx(10.5)


def test_small_transfers_and_directory_ops_overtake_a_large_one():
    queue = FopQueue()
    queue.submit(Operation("big", OpKind.DOWNLOAD, "/big", 0.0, 10_000_000), seconds_per_byte=1e-6)
    queue.submit(Operation("small", OpKind.DOWNLOAD, "/small", 1.0, 1000), seconds_per_byte=1e-6)
    queue.submit(Operation("mk", OpKind.MKDIR, "/d", 2.0))
    queue.submit(Operation("ls", OpKind.LIST, "/e", 1.5))
    # FOPs: big 10, small 1.001, mk 2.01, ls 1.51; directory ops FCFS among themselves.
    assert drain(queue) == ["small", "ls", "mk", "big"]


def test_large_transfer_is_not_overtaken_after_its_virtual_finish():
    queue = FopQueue()
    queue.submit(Operation("big", OpKind.DOWNLOAD, "/big", 0.0, 1000), seconds_per_byte=0.01)  # FOP 10
    queue.submit(Operation("late", OpKind.DOWNLOAD, "/late", 10.5, 1), seconds_per_byte=0.01)
    assert drain(queue) == ["big", "late"]


def test_related_operations_wait_for_the_acknowledgement():
    queue = FopQueue()
    queue.submit(Operation("up", OpKind.UPLOAD, "/d/file", 0.0, 10**9), seconds_per_byte=1e-6)
    queue.submit(Operation("rm", OpKind.RMDIR, "/d", 1.0))
    queue.submit(Operation("other", OpKind.MKDIR, "/x", 2.0))
    first = queue.next_ready()
    assert first.op_id == "other"  # rmdir is blocked behind the upload into /d
    second = queue.next_ready()
    assert second.op_id == "up"
    assert queue.next_ready() is None  # stop-and-wait: rmdir waits for the upload's ack
    queue.ack("up")
    assert queue.next_ready().op_id == "rm"
    with pytest.raises(KeyError):
        queue.ack("up")


def test_move_relates_both_ends():
    mv = Operation("m", OpKind.MOVE, "/a/x", 0.0, dest="/b/y")
    assert fop.related(mv, Operation("u", OpKind.UPLOAD, "/b", 0.0))
    assert fop.related(mv, Operation("u", OpKind.UPLOAD, "/a/x/z", 0.0))
    assert not fop.related(mv, Operation("u", OpKind.UPLOAD, "/a/y", 0.0))
    queue = FopQueue()
    queue.submit(Operation("m", OpKind.MOVE, "/a/x", 0.0, dest="/a/y"))
    queue.submit(Operation("d", OpKind.DELETE, "/a/y", 0.0))
    assert drain(queue) == ["m", "d"]
    assert len(queue) == 0


ops_strategy = st.lists(
    st.tuples(
        st.sampled_from(list(OpKind)),
        st.sampled_from(PATHS),
        st.sampled_from(PATHS),
        st.integers(0, 5_000_000),
        st.floats(0, 5),
    ),
    min_size=1,
    max_size=40,
)


@settings(max_examples=300, deadline=None)
@given(ops_strategy, st.integers(1, 4), st.integers(0, 2**32 - 1))
def test_never_reorders_related_operations_and_serves_smallest_ready_fop(specs, concurrency, seed):
    rng = random.Random(seed)
    queue = FopQueue()
    ops, fops, now = [], {}, 0.0
    for i, (kind, path, dest, size, gap) in enumerate(specs):
        now += gap
        op = Operation(str(i), kind, path, now, size, dest if kind in (OpKind.MOVE, OpKind.COPY) else None)
        fops[op.op_id] = queue.submit(op, seconds_per_byte=1e-6)
        ops.append(op)
    acked: set[str] = set()
    in_flight: list[str] = []
    dispatched: list[str] = []
    while len(acked) < len(ops):
        ready = [
            op
            for op in ops
            if op.op_id not in acked
            and op.op_id not in in_flight
            and all(prev.op_id in acked for prev in ops[: int(op.op_id)] if fop.related(prev, op))
        ]
        if len(in_flight) < concurrency and ready:
            op = queue.next_ready()
            assert op is not None
            best = min(ready, key=lambda o: (fops[o.op_id], int(o.op_id)))
            assert op.op_id == best.op_id  # smallest FOP among the releasable ones
            in_flight.append(op.op_id)
            dispatched.append(op.op_id)
            continue
        if not ready:
            assert queue.next_ready() is None
        done = in_flight.pop(rng.randrange(len(in_flight)))
        queue.ack(done)
        acked.add(done)
    assert sorted(dispatched, key=int) == [op.op_id for op in ops]
    assert len(queue) == 0


@settings(max_examples=300, deadline=None)
@given(st.floats(0, 4e9), st.floats(0, 4e9), st.integers(0, 10**9), st.integers(0, 10**9))
def test_sort_key_orders_like_the_priority(p1, p2, s1, s2):
    k1, k2 = fop.queue_sort_key(p1, s1), fop.queue_sort_key(p2, s2)
    if round(p1 * 1e6) != round(p2 * 1e6):
        assert (k1 < k2) == (p1 < p2)
    else:
        assert (k1 < k2) == (s1 < s2)


def test_operation_item_round_trip():
    op = Operation("id-1", OpKind.MOVE, "/a/b", 1234.5, 17, dest="/c")
    item = fop.operation_to_item(op)
    assert not any(isinstance(v, float) for v in item.values())
    assert fop.operation_from_item(item) == op


op_strategy = st.builds(
    lambda kind, path, dest: Operation(
        "x", kind, path, 0.0, dest=dest if kind in (OpKind.MOVE, OpKind.COPY) else None
    ),
    st.sampled_from(list(OpKind)),
    st.sampled_from(PATHS),
    st.sampled_from(PATHS),
)


@settings(max_examples=500, deadline=None)
@given(op_strategy, op_strategy)
def test_dynamodb_markers_block_exactly_the_related_operations(earlier, later):
    held = {pk for pk, _ in fop.marker_keys(earlier, "u1", 7)}
    assert bool(held & fop.blocking_partitions(later, "u1")) == fop.related(earlier, later)
    assert not held & fop.blocking_partitions(later, "u2")  # users never block each other
