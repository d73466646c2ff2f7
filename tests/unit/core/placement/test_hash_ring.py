"""Consistent-hash placement: deterministic, distinct, balanced, and stable under change."""

import hashlib
import subprocess
import sys
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hycloud_core.placement.ring import HashRing, migrate

REGIONS = [
    "us-east-1",
    "us-west-2",
    "eu-west-1",
    "eu-central-1",
    "ap-southeast-1",
    "ap-northeast-1",
    "sa-east-1",
    "ca-central-1",
    "ap-south-1",
    "eu-north-1",
]
KEYS = [hashlib.sha256(i.to_bytes(4, "big")).hexdigest() for i in range(12000)]

instance_sets = st.lists(
    st.text(st.characters(codec="utf-8", exclude_characters="\x00"), min_size=1, max_size=12),
    min_size=3,
    max_size=8,
    unique=True,
)


@settings(max_examples=30, deadline=None)
@given(instances=instance_sets, n=st.integers(1, 3), key=st.binary(max_size=40))
def test_place_gives_n_distinct_instances(instances, n, key):
    ring = HashRing(instances, vnodes=40)
    placed = ring.place(key, n)
    assert len(placed) == n == len(set(placed))
    assert set(placed) <= set(instances)
    assert ring.place(key, n) == placed
    assert HashRing(reversed(instances), vnodes=40).place(key, n) == placed
    assert ring.place(key, len(instances))[:n] == placed


def test_place_rejects_more_blocks_than_instances():
    ring = HashRing(REGIONS[:3])
    with pytest.raises(ValueError):
        ring.place("k", 4)
    with pytest.raises(ValueError):
        HashRing().place("k", 1)


def test_same_placement_in_another_process():
    ring = HashRing(REGIONS[:5])
    here = [ring.place(k, 3) for k in KEYS[:50]]
    code = (
        "import json, hashlib\n"
        "from hycloud_core.placement.ring import HashRing\n"
        f"r = HashRing({REGIONS[:5]!r})\n"
        "keys = [hashlib.sha256(i.to_bytes(4, 'big')).hexdigest() for i in range(50)]\n"
        "print(json.dumps([r.place(k, 3) for k in keys]))\n"
    )
    import json

    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONHASHSEED": "12345", "PYTHONPATH": ":".join(sys.path)},
    )
    assert json.loads(out.stdout) == here


def placements(ring: HashRing, n: int) -> list[list[str]]:
    return [ring.place(k, n) for k in KEYS]


def migrated(
    ring: HashRing, before: list[list[str]], n: int
) -> tuple[list[list[str]], list[tuple[str, str]]]:
    """Placements after migrating to `ring`, and (from, to) of every block whose instance changed."""
    after = [migrate(b, ring.place(k, n)) for b, k in zip(before, KEYS, strict=True)]
    moved = [
        (b, a)
        for old, new in zip(before, after, strict=True)
        for b, a in zip(old, new, strict=True)
        if b != a
    ]
    return after, moved


@settings(max_examples=12, deadline=None, derandomize=True)
@given(size=st.integers(3, 8), n=st.integers(1, 3), data=st.data())
def test_adding_an_instance_moves_about_one_in_n_plus_one(size, n, data):
    names = data.draw(st.permutations(REGIONS))
    ring = HashRing(names[:size])
    before = placements(ring, n)
    ring.add(names[size])
    after, moved = migrated(ring, before, n)
    assert all(a == names[size] for _, a in moved)  # blocks only ever move to the newcomer
    fraction = len(moved) / (len(KEYS) * n)
    expected = 1 / (size + 1)
    assert 0.6 * expected < fraction < 1.5 * expected


@settings(max_examples=12, deadline=None, derandomize=True)
@given(size=st.integers(4, 9), n=st.integers(1, 3), data=st.data())
def test_removing_an_instance_moves_only_its_blocks(size, n, data):
    names = data.draw(st.permutations(REGIONS))[:size]
    gone = data.draw(st.sampled_from(names))
    ring = HashRing(names)
    before = placements(ring, n)
    ring.remove(gone)
    after, moved = migrated(ring, before, n)
    assert all(b == gone for b, _ in moved)
    assert len(moved) == sum(old.count(gone) for old in before)  # and every block it held moves
    assert all(len(set(p)) == n for p in after)
    fraction = len(moved) / (len(KEYS) * n)
    assert 0.6 / size < fraction < 1.5 / size


@pytest.mark.parametrize("size", [3, 5, 8, 10])
@pytest.mark.parametrize("n", [1, 3])
def test_load_is_balanced(size, n):
    ring = HashRing(REGIONS[:size])
    load = Counter(inst for p in placements(ring, n) for inst in p)
    mean = len(KEYS) * n / size
    assert set(load) == set(REGIONS[:size])
    assert max(load.values()) < 1.25 * mean and min(load.values()) > 0.75 * mean


def test_migrate_keeps_surviving_blocks_in_place():
    assert migrate(["a", "b", "c"], ["d", "c", "a"]) == ["a", "d", "c"]
    assert migrate(["a", "b"], ["a", "b"]) == ["a", "b"]
    with pytest.raises(ValueError):
        migrate(["a"], ["a", "b"])


def test_add_existing_and_remove_missing():
    ring = HashRing(REGIONS[:3])
    before = placements(ring, 2)[:100]
    ring.add(REGIONS[0])
    assert placements(ring, 2)[:100] == before
    with pytest.raises(KeyError):
        ring.remove("nowhere-1")
    assert len(ring) == 3 and REGIONS[1] in ring
