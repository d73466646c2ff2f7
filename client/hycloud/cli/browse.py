"""Commands that read the tree as coreutils do: `ls` (with -R, or of a file), `cat`, `head`, `du`,
`tree`, `find` and `touch`. Each takes `--json` like the others; failures exit by `exit_codes`."""

from __future__ import annotations

import fnmatch
import sys
import time
from typing import TYPE_CHECKING, Annotated, BinaryIO

import typer

from hycloud_core import content, paths
from hycloud_core.errors import BadRequestError, ConflictError

from .output import STATE, echo, emit, entry_name, human_size, long_listing
from .walk import list_or_stat, walk

if TYPE_CHECKING:
    from ..sdk.client import HyCloud

CHUNK = 8 * 1024 * 1024  # bytes a large file is read by, one ranged GET each
NO_H = {"help_option_names": ["--help"]}  # -h is for human sizes, as in ls and du


def _client() -> HyCloud:
    from ..sdk.client import HyCloud  # here: the client loads when a command runs, not for --help

    return HyCloud.from_config()


def flag(*names: str, help: str) -> typer.models.OptionInfo:
    return typer.Option(*names, help=help, metavar="")


def examples(*lines: str) -> str:
    return "Examples:\n\n" + "\n\n".join(f"  {line}" for line in lines)


# --- ls --------------------------------------------------------------------------------------------
def ls(
    path: Annotated[str, typer.Argument(metavar="PATH")] = "/",
    long: Annotated[bool, flag("-l", "--long", help="Type, size and modification time (UTC) too.")] = False,
    human: Annotated[bool, flag("-h", "--human-readable", help="Sizes as 1.5K, 12M, 3.0G.")] = False,
    recursive: Annotated[bool, flag("-R", "--recursive", help="List every folder below too.")] = False,
) -> None:
    """List a directory (or show a file, as ls does)."""
    from .encrypted import routed_ls

    client = _client()
    if routed_ls(client, path):
        return  # inside an encrypted folder: its decrypted names
    if recursive:
        return _ls_recursive(client, path, long, human)
    entry, entries = list_or_stat(client, path)
    if STATE["json"]:
        return emit(entry if entry is not None else entries)
    if entry is not None:  # a file: its own line, named as asked
        entries = [{**entry, "name": path}]
    for line in long_listing(entries, human) if long else [entry_name(e) for e in entries]:
        echo(line)


def _ls_recursive(client: HyCloud, path: str, long: bool, human: bool) -> None:
    """As `ls -R`: each folder's path and a colon, its entries, a blank line between folders."""
    folders = walk(client, paths.normalize(path))
    if STATE["json"]:
        return emit({f.path: f.entries for f in folders})
    for i, folder in enumerate(folders):
        echo(("\n" if i else "") + f"{folder.path}:")
        for line in long_listing(folder.entries, human) if long else map(entry_name, folder.entries):
            echo(line)


# --- cat, head and get to stdout ------------------------------------------------------------------
def copy_to(client: HyCloud, path: str, out: BinaryIO) -> int:
    """A remote file's bytes written to `out` as they come (checked against its hash), the count."""
    written = 0
    with client.open(path, "rb", buffer_size=CHUNK) as f:
        while chunk := f.read(CHUNK):
            out.write(chunk)
            written += len(chunk)
    out.flush()
    return written


def cat(paths_: Annotated[list[str], typer.Argument(metavar="PATH...")]) -> None:
    """Write files to stdout, one after another."""
    client = _client()
    for path in paths_:
        copy_to(client, path, sys.stdout.buffer)


def head(
    path: Annotated[str, typer.Argument(metavar="PATH")],
    lines: Annotated[int, typer.Option("-n", "--lines", metavar="N", help="The first N lines.")] = 10,
    count: Annotated[
        int | None, typer.Option("-c", "--bytes", metavar="N", help="The first N bytes instead.")
    ] = None,
) -> None:
    """Write the start of a file to stdout (a large file: only the ranges that hold it are read)."""
    if lines < 0 or (count is not None and count < 0):
        raise BadRequestError("-n and -c take a count of 0 or more", code="bad-usage")
    out = sys.stdout.buffer
    with _client().open(path, "rb", buffer_size=64 * 1024) as f:
        if count is not None:
            out.write(f.read(count))
        else:
            for _ in range(lines):
                line = f.readline()
                if not line:
                    break
                out.write(line)
    out.flush()


# --- du, tree, find ---------------------------------------------------------------------------------
def du(
    path: Annotated[str, typer.Argument(metavar="PATH")] = "/",
    summarize: Annotated[bool, flag("-s", "--summarize", help="Only the total for PATH.")] = False,
    human: Annotated[bool, flag("-h", "--human-readable", help="Sizes as 1.5K, 12M, 3.0G.")] = False,
    max_depth: Annotated[
        int | None, typer.Option("-d", "--max-depth", metavar="N", help="Totals only N levels down.")
    ] = None,
) -> None:
    """Bytes and files held below each folder (file sizes as stored, not blocks)."""
    client = _client()
    entry, entries = list_or_stat(client, path)
    if entry is not None:
        totals = {entry["path"]: (entry["size"], 1)}
    else:
        totals = _folder_totals(client, paths.normalize(path))
    depth_of = {p: _depth(paths.normalize(path), p) for p in totals}
    shown = [p for p in totals if (not summarize or depth_of[p] == 0)]
    shown = [p for p in shown if max_depth is None or depth_of[p] <= max_depth]
    if STATE["json"]:
        return emit([{"path": p, "bytes": totals[p][0], "files": totals[p][1]} for p in shown])
    for p in shown:
        echo(f"{human_size(totals[p][0]) if human else totals[p][0]}\t{p}")


def _depth(root: str, path: str) -> int:
    rest = path[len(root) :].strip("/")
    return rest.count("/") + 1 if rest else 0


def _folder_totals(client: HyCloud, root: str) -> dict[str, tuple[int, int]]:
    """(bytes, files) below each folder, deepest folders first and the root last, as du prints."""
    own: dict[str, tuple[int, int]] = {}
    order: list[str] = []
    for folder in walk(client, root):
        own[folder.path] = (sum(e["size"] for e in folder.files), len(folder.files))
        order.append(folder.path)
    totals = dict(own)
    for p in sorted(order, key=lambda p: -p.count("/")):
        if p != root:
            parent = paths.parent(p)
            b, n = totals[parent]
            totals[parent] = (b + totals[p][0], n + totals[p][1])
    return {p: totals[p] for p in sorted(order, key=lambda p: (-_depth(root, p), p))}


def tree(
    path: Annotated[str, typer.Argument(metavar="PATH")] = "/",
    level: Annotated[
        int | None, typer.Option("-L", "--level", metavar="N", help="Descend at most N levels.")
    ] = None,
    sizes: Annotated[bool, flag("-s", "--size", help="Each file's size too.")] = False,
    human: Annotated[bool, flag("-h", "--human-readable", help="Sizes as 1.5K, 12M, 3.0G.")] = False,
) -> None:
    """Show a folder's tree, as `tree` does, with a count of folders and files at the end."""
    root = paths.normalize(path)
    listed = {f.path: f for f in walk(_client(), root, None if level is None else level - 1)}
    folders = sum(len(f.subfolders) for f in listed.values())
    files = sum(len(f.files) for f in listed.values())
    if STATE["json"]:
        return emit({"path": root, "tree": _as_json(listed, root), "folders": folders, "files": files})
    echo(root)
    for line in _tree_lines(listed, root, "", sizes or human, human):
        echo(line)
    echo(f"\n{folders} director{'y' if folders == 1 else 'ies'}, {files} file{'' if files == 1 else 's'}")


def _tree_lines(listed: dict, folder: str, indent: str, sizes: bool, human: bool) -> list[str]:
    entries = listed[folder].entries if folder in listed else []
    out = []
    for i, e in enumerate(entries):
        last = i == len(entries) - 1
        size = f"[{human_size(e['size']) if human else e['size']}]  " if sizes and e["type"] != "dir" else ""
        out.append(f"{indent}{'└── ' if last else '├── '}{size}{entry_name(e)}")
        if e["type"] == "dir":
            out += _tree_lines(listed, e["path"], indent + ("    " if last else "│   "), sizes, human)
    return out


def _as_json(listed: dict, folder: str) -> list[dict]:
    return [
        {**e, **({"contents": _as_json(listed, e["path"])} if e["path"] in listed else {})}
        if e["type"] == "dir"
        else e
        for e in listed[folder].entries
    ]


def find(
    path: Annotated[str, typer.Argument(metavar="PATH")] = "/",
    name: Annotated[
        str | None, typer.Option("--name", "-name", metavar="GLOB", help="Names matching GLOB (fnmatch).")
    ] = None,
    kind: Annotated[
        str | None, typer.Option("--type", "-type", metavar="f|d", help="Only files (f) or folders (d).")
    ] = None,
    max_depth: Annotated[
        int | None, typer.Option("--maxdepth", "-maxdepth", metavar="N", help="At most N levels down.")
    ] = None,
    newer_than: Annotated[
        float | None,
        typer.Option("--mmin", metavar="MINUTES", help="Modified within the last MINUTES."),
    ] = None,
) -> None:
    """Print the paths below PATH (PATH too) that match, as `find` does."""
    if kind not in (None, "f", "d"):
        raise BadRequestError("--type is f (files) or d (folders)", code="bad-usage")
    root = paths.normalize(path)
    client = _client()
    entry, _ = list_or_stat(client, root)
    if entry is not None:
        found = [entry]
    else:
        found = (
            [{**client.stat(root), "depth": 0}]
            if root != "/"
            else [{"path": "/", "name": "/", "type": "dir"}]
        )
        for folder in walk(client, root, None if max_depth is None else max_depth - 1):
            found += [{**e, "depth": folder.depth + 1} for e in folder.entries]
    since = None if newer_than is None else time.time() - newer_than * 60
    hits = [e for e in found if _matches(e, name, kind, since)]
    if STATE["json"]:
        return emit([{k: v for k, v in e.items() if k != "depth"} for e in hits])
    for e in hits:
        echo(e["path"])


def _matches(entry: dict, name: str | None, kind: str | None, since: float | None) -> bool:
    if name is not None and not fnmatch.fnmatchcase(entry.get("name", ""), name):
        return False
    if kind is not None and (entry["type"] == "dir") != (kind == "d"):
        return False
    return since is None or entry.get("mtime", 0) >= since


# --- touch ----------------------------------------------------------------------------------------
def touch(
    paths_: Annotated[list[str], typer.Argument(metavar="PATH...")],
    no_create: Annotated[bool, flag("-c", "--no-create", help="Do not create missing files.")] = False,
    parents: Annotated[bool, flag("-p", "--parents", help="Make missing parent folders.")] = False,
) -> None:
    """Create empty files; an existing small file gets the current time (its bytes sent again,
    only while unchanged). A large file's time cannot be changed without sending it again."""
    client = _client()
    from ..encrypted.guard import refuse_into

    refuse_into(client, paths_, "hycloud touch")  # an empty plaintext file inside: refused
    done = [_touch(client, p, no_create, parents) for p in paths_]
    emit(done, "\n".join(f"{d['action']} {d['path']}" for d in done if d["action"] != "skipped") or None)


def _touch(client: HyCloud, path: str, no_create: bool, parents: bool) -> dict:
    from ..preconditions import ABSENT  # with the bundle format (zstandard): only for touch

    path = paths.normalize(path)
    if not no_create:
        try:
            client.put_bytes(path, b"", parents=parents, expect=ABSENT)
            return {"path": path, "action": "created"}
        except ConflictError as err:
            if err.code != "version-mismatch":
                raise
    try:
        entry = client.stat(path)
    except client.NotFoundError:
        if no_create:
            return {"path": path, "action": "skipped"}
        raise
    if entry["type"] == "dir":
        return {"path": path, "action": "unchanged"}  # a folder's time follows its contents
    if entry.get("storage") == "large":
        raise BadRequestError(
            f"{path} is a large file: its time is kept as uploaded (put it again to change it)",
            code="large-file-time",
        )
    data = client.get_bytes(path)
    client.put_bytes(path, data, mtime=time.time(), mode=entry.get("mode"), expect=content.hash_bytes(data))
    return {"path": path, "action": "touched"}
