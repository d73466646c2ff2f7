"""`HyCloud.open` for writing as the README shows it: a missing folder fails at open (as Python's
`open` does), not at close after the bytes were written; `parents=True` makes it; "x" creates
only where nothing is, checked at open and again when the upload commits."""

from __future__ import annotations

import uuid

import pytest

from hycloud_core.errors import ConflictError, NotFoundError


@pytest.fixture
def client(alice):
    return alice.sdk()


def test_open_w_into_a_missing_folder_fails_at_open_and_parents_makes_it(client):
    folder = f"/sdk-{uuid.uuid4().hex[:8]}"
    with pytest.raises(NotFoundError) as err:
        client.open(f"{folder}/out.csv", "w")
    assert "parents=True" in err.value.message and not client.exists(folder)
    with client.open(f"{folder}/out.csv", "w", parents=True) as f:  # the README's example
        f.write("a,b\n1,2\n")
    assert client.get_bytes(f"{folder}/out.csv") == b"a,b\n1,2\n"
    with client.open(f"{folder}/again.csv", "w") as f:  # the folder is there now
        f.write("x\n")
    assert client.get_bytes(f"{folder}/again.csv") == b"x\n"


def test_open_x_creates_only_where_nothing_is(client):
    path = f"/sdk-x-{uuid.uuid4().hex[:8]}.bin"
    with client.open(path, "xb") as f:
        f.write(b"first")
    with pytest.raises(ConflictError):
        client.open(path, "xb")
    late = client.open(f"{path}.2", "xb")
    late.write(b"mine")
    client.put_bytes(f"{path}.2", b"another writer's")  # made between open and close
    with pytest.raises(ConflictError) as err:
        late.close()
    assert err.value.code == "version-mismatch"
    assert client.get_bytes(path) == b"first" and client.get_bytes(f"{path}.2") == b"another writer's"
