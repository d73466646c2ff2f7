"""A flat, tree-free statement of what a Merkle comparison must report, for the property tests."""

from hycloud_core.merkle import DirEntry, FileEntry, Tombstone


def parent(path: str) -> str:
    return path.rsplit("/", 1)[0] or "/"


def ancestors(path: str):
    while path != "/":
        path = parent(path)
        yield path


def states(listing: dict) -> dict:
    """path -> ("dir", mtime) | ("file", content, blocks, mtime) | ("tombstone", time)."""
    dirs = {"/": 0.0}
    for path, entry in listing.items():
        for a in ancestors(path):
            dirs.setdefault(a, 0.0)
        if isinstance(entry, DirEntry):
            dirs[path] = max(dirs.get(path, 0.0), entry.mtime)
    out = {p: ("dir", t) for p, t in dirs.items()}
    for path, entry in listing.items():
        if isinstance(entry, FileEntry):
            out[path] = ("file", entry.content_hash, entry.blocks, entry.mtime)
            for i, b in enumerate(entry.blocks):
                out[f"{path}/#{i}"] = ("block", b, (), entry.mtime)
    for path, entry in listing.items():
        if isinstance(entry, Tombstone) and path not in out:
            out[path] = ("tombstone", entry.deleted_at)
    # a directory's time is the latest time anywhere below it
    for path, st in list(out.items()):
        t = st[-1]
        for a in ancestors(path):
            if a in out and out[a][0] == "dir" and out[a][1] < t:
                out[a] = ("dir", t)
    return out


def expected_differences(local: dict, remote: dict) -> dict:
    """path -> (local kind or None, remote kind or None, winner) for the topmost differing elements."""
    L, R = states(local), states(remote)
    out = {}
    for path in L.keys() | R.keys():
        lo, re = L.get(path), R.get(path)
        lo_live = lo is not None and lo[0] != "tombstone"
        re_live = re is not None and re[0] != "tombstone"
        if not (lo_live or re_live):
            continue
        if path != "/" and not _compared(path, L, R):
            continue
        if lo_live and re_live:
            if lo[0] == re[0] == "dir" or (lo[0] == re[0] and lo[1:3] == re[1:3]):
                continue
        out[path] = (lo and lo[0], re and re[0], _winner(lo, re))
    return out


def _compared(path: str, L: dict, R: dict) -> bool:
    """The exchange only looks below pairs that are live on both sides: two dirs, or two coded files."""
    p = parent(path)
    lp, rp = L.get(p), R.get(p)
    if lp is None or rp is None:
        return False
    if lp[0] == rp[0] == "dir":
        return True
    return lp[0] == rp[0] == "file" and bool(lp[2]) and bool(rp[2])


def _winner(lo, re) -> str:
    lt = float("-inf") if lo is None else lo[-1]
    rt = float("-inf") if re is None else re[-1]
    if lt != rt:
        return "local" if lt > rt else "remote"
    lo_live = lo is not None and lo[0] != "tombstone"
    re_live = re is not None and re[0] != "tombstone"
    return "local" if lo_live and not re_live else "remote"
