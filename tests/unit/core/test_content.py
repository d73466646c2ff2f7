"""Content hash: the streaming hasher agrees with the one-shot hash at every part boundary."""

from hypothesis import given, settings
from hypothesis import strategies as st


@given(st.binary(max_size=3000), st.lists(st.integers(1, 700), max_size=20))
@settings(max_examples=100, deadline=None)
def test_part_hasher_matches_hash_of_whole_bytes(data, cuts):
    from hycloud_core import content

    old = content.PART_SIZE
    content.PART_SIZE = 256  # small parts so the property covers many part boundaries
    try:
        hasher, at = content.PartHasher(), 0
        for cut in cuts:
            hasher.update(data[at : at + cut])
            at += cut
        hasher.update(data[at:])
        assert hasher.hexdigest() == content.hash_bytes(data)
    finally:
        content.PART_SIZE = old


@given(st.binary(max_size=3000), st.lists(st.integers(1, 700), max_size=20))
@settings(max_examples=100, deadline=None)
def test_pool_part_hasher_matches_hash_of_whole_bytes(data, cuts):
    from concurrent.futures import ThreadPoolExecutor

    from hycloud_core import content

    old = content.PART_SIZE
    content.PART_SIZE = 256  # whole parts go to the pool, pieces across boundaries stay in order
    try:
        with ThreadPoolExecutor(2) as pool:
            hasher, at = content.PoolPartHasher(pool), 0
            for cut in cuts:
                hasher.update(data[at : at + cut])
                at += cut
            hasher.update(data[at:])
            assert hasher.hexdigest() == content.hash_bytes(data)
    finally:
        content.PART_SIZE = old
