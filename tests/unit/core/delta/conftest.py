import random

from hypothesis import strategies as st

BLOCK_SIZES = [1, 2, 3, 7, 16, 64, 100, 256]


@st.composite
def edited_versions(draw, max_size: int = 6000) -> tuple[bytes, bytes]:
    """An old file and a new one made from it by random inserts, deletes and overwrites."""
    seed = draw(st.integers(0, 2**32 - 1))
    rng = random.Random(seed)
    size = draw(st.integers(0, max_size))
    alphabet = draw(st.sampled_from([2, 16, 256]))  # small alphabets make repeated blocks
    old = bytes(rng.randrange(alphabet) for _ in range(size))
    new = bytearray(old)
    for _ in range(draw(st.integers(0, 8))):
        kind = rng.choice(["insert", "delete", "overwrite"])
        at = rng.randint(0, len(new))
        n = rng.randint(1, 300)
        chunk = bytes(rng.randrange(256) for _ in range(n))
        if kind == "insert":
            new[at:at] = chunk
        elif kind == "delete":
            del new[at : at + n]
        else:
            new[at : at + n] = chunk
    if draw(st.booleans()):  # also the reverse direction: the edits undone
        return bytes(new), old
    return old, bytes(new)
