import posixpath

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hycloud_core.control.elimination import Eliminator, LocalOp
from hycloud_core.control.fop import OpKind

DIRS = ["/a", "/b", "/a/c"]
FILES = ["/f", "/g", "/a/f", "/a/g", "/b/f", "/a/c/f"]


class InvalidOp(Exception):
    pass


def apply(fs: dict[str, object], op: LocalOp) -> None:
    """Strict semantics: an operation out of order raises, so a bad elimination cannot hide."""

    def need_dir(path: str) -> None:
        if fs.get(posixpath.dirname(path)) != "dir":
            raise InvalidOp(f"{op}: no parent")

    if op.kind is OpKind.UPLOAD:
        need_dir(op.path)
        if fs.get(op.path) == "dir":
            raise InvalidOp(str(op))
        fs[op.path] = op.data["content"]
    elif op.kind is OpKind.DELETE:
        if op.path not in fs or fs[op.path] == "dir":
            raise InvalidOp(str(op))
        del fs[op.path]
    elif op.kind is OpKind.MKDIR:
        need_dir(op.path)
        if op.path in fs:
            raise InvalidOp(str(op))
        fs[op.path] = "dir"
    elif op.kind is OpKind.RMDIR:
        if fs.get(op.path) != "dir" or any(p.startswith(op.path + "/") for p in fs):
            raise InvalidOp(str(op))
        del fs[op.path]
    elif op.kind in (OpKind.MOVE, OpKind.COPY):
        need_dir(op.dest)
        if op.path not in fs or fs[op.path] == "dir" or op.dest in fs:
            raise InvalidOp(str(op))
        fs[op.dest] = fs[op.path]
        if op.kind is OpKind.MOVE:
            del fs[op.path]


def valid_choices(fs: dict[str, object]) -> list[tuple[OpKind, str, str | None]]:
    dirs = {p for p, v in fs.items() if v == "dir"}
    files = {p for p, v in fs.items() if v != "dir"}
    out: list[tuple[OpKind, str, str | None]] = []
    for f in FILES:
        if posixpath.dirname(f) in dirs:
            out.append((OpKind.UPLOAD, f, None))
            if f not in files:
                out += [(k, src, f) for src in sorted(files) for k in (OpKind.MOVE, OpKind.COPY)]
        if f in files:
            out.append((OpKind.DELETE, f, None))
    for d in DIRS:
        if d not in fs and posixpath.dirname(d) in dirs:
            out.append((OpKind.MKDIR, d, None))
        if d in dirs and not any(p.startswith(d + "/") for p in fs):
            out.append((OpKind.RMDIR, d, None))
    return out


@st.composite
def scenario(draw):
    fs: dict[str, object] = {"/": "dir"}
    for d in DIRS:
        if posixpath.dirname(d) in fs and draw(st.booleans()):
            fs[d] = "dir"
    for f in FILES:
        if posixpath.dirname(f) in fs and draw(st.booleans()):
            fs[f] = "v0"
    initial = dict(fs)
    ops = []
    for i in range(draw(st.integers(0, 30))):
        kind, path, dest = draw(st.sampled_from(valid_choices(fs)))  # dest: move/copy target
        creates = kind is OpKind.UPLOAD and path not in fs  # the client knows its own view
        op = LocalOp(str(i), kind, path, dest, creates, {"content": f"v{i + 1}"})
        apply(fs, op)
        ops.append(op)
    return initial, ops


def test_examples_from_the_paper_and_their_limits():
    q = Eliminator()
    q.push(LocalOp("1", OpKind.UPLOAD, "/x", creates=False))
    assert q.push(LocalOp("2", OpKind.UPLOAD, "/x")) == ["1"]
    assert q.pending[-1].creates is False
    assert q.push(LocalOp("3", OpKind.DELETE, "/x")) == ["2"]
    assert [op.op_id for op in q.pending] == ["3"]

    q = Eliminator()
    q.push(LocalOp("1", OpKind.MKDIR, "/d"))
    q.push(LocalOp("2", OpKind.UPLOAD, "/d/f", creates=True))
    q.push(LocalOp("3", OpKind.UPLOAD, "/d/f"))  # inherits creates=True
    assert q.push(LocalOp("4", OpKind.DELETE, "/d/f")) == ["3", "4"]  # "2" went when "3" came
    assert q.push(LocalOp("5", OpKind.RMDIR, "/d")) == ["1", "5"]
    assert q.pending == []

    q = Eliminator()
    q.push(LocalOp("1", OpKind.UPLOAD, "/x", creates=True))
    q.push(LocalOp("2", OpKind.COPY, "/x", dest="/y"))  # reads /x: the upload must stay
    assert q.push(LocalOp("3", OpKind.DELETE, "/x")) == []
    assert [op.op_id for op in q.pending] == ["1", "2", "3"]


@settings(max_examples=400, deadline=None)
@given(scenario())
def test_elimination_keeps_every_visible_effect(case):
    initial, ops = case
    queue = Eliminator()
    for op in ops:
        queue.push(op)
    kept = queue.pending
    ids = [op.op_id for op in kept]
    assert ids == sorted(ids, key=int)  # request order is kept
    expected, got = dict(initial), dict(initial)
    for op in ops:
        apply(expected, op)
    for op in kept:
        apply(got, op)  # raises if an elimination broke an ordering dependency
    assert got == expected
    assert len(kept) <= len(ops)


def test_strict_model_rejects_out_of_order_operations():
    with pytest.raises(InvalidOp):
        apply({"/": "dir"}, LocalOp("1", OpKind.UPLOAD, "/d/f", data={"content": "x"}))
