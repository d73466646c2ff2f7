"""Content hash: the streaming hasher agrees with the one-shot hash at every part boundary."""

from hypothesis import given, settings
from hypothesis import strategies as st


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
