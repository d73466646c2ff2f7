"""`hycloud check SRC DST`: does a local folder hold what a cloud folder holds (rclone check)?

Files are compared by content hash and path through the Merkle exchange `sync` uses: equal
subtrees are never descended into, so an unchanged tree costs one request, and no file is
downloaded. Local hashes come from the cache `sync` keeps (only files whose size or mtime changed
are read; all with --checksum). The report is rclone's combined one: `- path` only in SRC,
`+ path` only in DST, `* path` in both with other content, `! path` a file on one side and a
folder on the other; then a count. Exit 0 when they agree, 1 when they differ (as rclone and diff).
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from hycloud_core import content
from hycloud_core.errors import NotFoundError

from . import exit_codes
from .output import emit
from .sync import split_ends
from .tree_options import Exclude, Include

if TYPE_CHECKING:
    from ..sync.diff import Differences
    from ..sync.scan import LocalTree

EPILOG = """Examples:

  hycloud check ./site hc:/www            # after a put -r or sync: same files, same bytes?

  hycloud check hc:/backup ./restore --exclude '*.tmp'

  hycloud --json check ./data hc:/data | jq .differ
"""


def check_command(
    src: Annotated[str, typer.Argument(metavar="SRC", help="Local folder, or cloud folder as hc:/path.")],
    dst: Annotated[str, typer.Argument(metavar="DST", help="Local folder, or cloud folder as hc:/path.")],
    exclude: Exclude = None,
    include: Include = None,
    checksum: Annotated[
        bool,
        typer.Option("--checksum", "-c", help="Hash every local file, not only changed ones.", metavar=""),
    ] = False,
    matching: Annotated[
        bool, typer.Option("--match", help="List matching files too (`= path`).", metavar="")
    ] = False,
) -> None:
    """Compare a local folder with a cloud folder by content hash (nothing is changed or downloaded)."""
    from ..sdk.client import HyCloud  # here: the client and sync engine load only for `check`
    from ..sync.diff import find
    from ..sync.filters import PathFilter
    from ..sync.scan import scan
    from ..sync.state import SyncState

    direction, local_root, remote_root = split_ends(src, dst)
    keep = PathFilter.of(tuple(exclude or ()), tuple(include or ()))
    if not local_root.is_dir():
        raise NotFoundError(f"{local_root} is not a local folder", code="no-such-local-file")
    client = HyCloud.from_config()
    state = SyncState("check")  # only its cache of local hashes is used
    try:
        local = scan(local_root, state, keep, checksum)
    finally:
        state.close()
    diff = find(client.merkle_children, remote_root, local, keep)
    report = compare(local, diff, local_is_src=direction == "push")
    lines = [f"{mark} {rel}" for mark, rel in report_lines(report, matching)]
    emit({**report, "src": src, "dst": dst}, "\n".join([*lines, summary(report, src, dst)]))
    if report["differ"] or report["only_src"] or report["only_dst"] or report["clashes"]:
        raise typer.Exit(exit_codes.ERROR)


def compare(local: LocalTree, diff: Differences, local_is_src: bool) -> dict:
    """What differs, by the exchange: files it names on one side only, on both, and the rest matching."""
    only_local = sorted(rel for rel in diff.files if rel in local.files and rel not in diff.remote)
    only_remote = sorted(rel for rel in diff.files if rel not in local.files and rel in diff.remote)
    changed = sorted(rel for rel in diff.files if rel in local.files and rel in diff.remote)
    same = sorted(rel for rel in local.files if rel not in diff.files and rel not in diff.clashes)
    return {
        "matching": same,
        "differ": changed,
        "only_src": only_local if local_is_src else only_remote,
        "only_dst": only_remote if local_is_src else only_local,
        "clashes": sorted(diff.clashes),
        "requests": diff.requests,
        "hashed": local.hashed,
    }


def report_lines(report: dict, matching: bool) -> list[tuple[str, str]]:
    marks = [("-", r) for r in report["only_src"]] + [("+", r) for r in report["only_dst"]]
    marks += [("*", r) for r in report["differ"]] + [("!", r) for r in report["clashes"]]
    marks += [("=", r) for r in report["matching"]] if matching else []
    return sorted(marks, key=lambda m: (m[1], m[0]))


def summary(report: dict, src: str, dst: str) -> str:
    counts = [
        (len(report["only_src"]), f"only in {src}"),
        (len(report["only_dst"]), f"only in {dst}"),
        (len(report["differ"]), "with other content"),
        (len(report["clashes"]), "a file on one side, a folder on the other"),
    ]
    found = sum(n for n, _ in counts)
    said = ", ".join(f"{n} {what}" for n, what in counts if n)
    head = f"{found} difference{'' if found == 1 else 's'} found ({said})" if found else "0 differences found"
    return f"{head}; {len(report['matching'])} matching files"


def local_hashes(path: Path) -> dict:
    """A local file's content hash as the cloud computes it (sha256 over the sha256 of each 8 MiB
    part) and its plain sha256 (what sha256sum prints), in one read."""
    parts, whole, size = content.PartHasher(), hashlib.sha256(), 0
    with open(path, "rb") as f:
        while piece := f.read(content.PART_SIZE):
            parts.update(piece)
            whole.update(piece)
            size += len(piece)
    return {"path": str(path), "size": size, "content_hash": parts.hexdigest(), "sha256": whole.hexdigest()}


def hash_command(
    files: Annotated[list[Path], typer.Argument(metavar="FILE...")],
    sha256: Annotated[
        bool, typer.Option("--sha256", help="The plain sha256 (as sha256sum prints) instead.", metavar="")
    ] = False,
) -> None:
    """Print local files' content hashes as the cloud computes them (`stat`, `ls --json` and
    share links show this `content_hash`), in sha256sum's format; --sha256 for the plain sha256."""
    found = [local_hashes(f) for f in files]
    key = "sha256" if sha256 else "content_hash"
    emit(found, "\n".join(f"{h[key]}  {h['path']}" for h in found))
