"""Hypothesis strategies for random listings and pairs of related listings (two diverged replicas)."""

from hypothesis import strategies as st

from hycloud_core.merkle import DirEntry, FileEntry, Tombstone

NAMES = st.sampled_from(["a", "b", "c", "d"])
PATHS = st.lists(NAMES, min_size=1, max_size=4).map(lambda parts: "/" + "/".join(parts))
TIMES = st.integers(1, 50).map(float)
FILES = st.builds(
    lambda content, mtime, blocks: FileEntry.of(content, mtime, tuple(blocks)),
    st.sampled_from([b"x", b"y", b"z"]),
    TIMES,
    st.one_of(st.just([]), st.lists(st.sampled_from([b"1", b"2", b"3"]), min_size=1, max_size=3)),
)
ENTRIES = st.one_of(FILES, st.builds(DirEntry, TIMES), st.builds(Tombstone, TIMES))


def sanitise(listing: dict) -> dict:
    """Drop files that other entries sit below, which no filesystem can hold."""
    return {
        p: e
        for p, e in listing.items()
        if not (isinstance(e, FileEntry) and any(q.startswith(p + "/") for q in listing))
    }


@st.composite
def mutated(draw, base: dict) -> dict:
    listing = dict(base)
    for _ in range(draw(st.integers(0, 5))):
        path = draw(st.sampled_from(sorted(listing)) if listing and draw(st.booleans()) else PATHS)
        entry = listing.get(path)
        if isinstance(entry, FileEntry) and entry.blocks and draw(st.booleans()):
            blocks = list(entry.blocks)
            blocks[draw(st.integers(0, len(blocks) - 1))] = draw(st.sampled_from([b"1", b"2", b"3", b"4"]))
            listing[path] = FileEntry(entry.content_hash, draw(TIMES), tuple(blocks))
        elif draw(st.booleans()):
            for p in [p for p in listing if p == path or p.startswith(path + "/")]:
                del listing[p]
            if draw(st.booleans()):
                listing[path] = Tombstone(draw(TIMES))
        else:
            listing[path] = draw(ENTRIES)
    return sanitise(listing)


@st.composite
def tree_pairs(draw):
    base = sanitise(draw(st.dictionaries(PATHS, ENTRIES, max_size=12)))
    return draw(mutated(base)), draw(mutated(base))
