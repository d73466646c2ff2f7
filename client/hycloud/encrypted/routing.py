"""Plain commands into encrypted folders: find the encrypted folder a cloud path is in, go through it.

`hycloud put|get|ls|sync` (and SDK users, through `put`, `get`, `ls`, `sync_push`, `sync_pull`
here) call `locate` first: one bundle request reads the `.hcenc` header of the path and of every
folder above it. A path inside an encrypted folder is then written and read through the encrypted
engine only (chunks sealed here, names encrypted), so no plaintext is stored beside the
ciphertext and no ciphertext is handed back as if it were the file. Without a passphrase or key
file the commands stop with `KeyUnavailableError` (exit 4) before anything is sent.
"""

from __future__ import annotations

import hashlib
import posixpath
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hycloud_core import bundle, paths
from hycloud_core.crypto import header as hdr
from hycloud_core.errors import HyCloudError

from . import download, upload
from .counters import Counters, default_path
from .folder import EncryptedFolder, ancestors, split
from .passphrase import read_secret
from .store import CloudStore

if TYPE_CHECKING:
    from ..sdk.client import HyCloud

Keep = Callable[[str], bool]  # a relative path -> whether it takes part (--exclude/--include)


@dataclass(frozen=True)
class Located:
    root: str  # the encrypted folder on the cloud ("/vault")
    inner: str  # the path inside it, no leading slash ("" for the folder itself)


def candidates(path: str) -> list[str]:
    """The path and every folder above it, deepest first: "/a/b" -> ["/a/b", "/a", "/"]."""
    parts = split(paths.normalize(path))
    return ["/" + "/".join(parts[:cut]) for cut in range(len(parts), -1, -1)]


def headers_at(client: HyCloud, roots: list[str]) -> set[str]:
    """Which of `roots` hold a folder header: one download request, absent paths answered as such."""
    wanted = {posixpath.join(root, hdr.NAME): root for root in roots}
    try:
        response = client.http.request(
            "POST", "/v1/bundles/download", json={"paths": sorted(wanted)}, headers={"Accept": bundle_type()}
        )
    except HyCloudError as err:
        if err.status == 404:
            return set()
        raise
    return {wanted[m.path] for m, _ in bundle.unpack(response.content).files if m.path in wanted}


def bundle_type() -> str:
    return "application/octet-stream"  # else API Gateway answers the bundle base64-encoded


def locate(client: HyCloud, path: str) -> Located | None:
    """The encrypted folder `path` is in (the nearest one above it, or itself), or None."""
    roots = candidates(path)
    found = headers_at(client, roots)
    for root in roots:  # deepest first
        if root in found:
            inner = split(paths.normalize(path))[len(split(root)) :]
            return Located(root, "/".join(inner))
    return None


def open_folder(client: HyCloud, where: Located, key_file: Path | None = None) -> EncryptedFolder:
    """The folder opened with the user's secret ($HYCLOUD_PASSPHRASE, $HYCLOUD_KEY_FILE, a prompt);
    KeyUnavailableError when there is none to be had."""
    secret = read_secret(key_file, what=where.root)
    return EncryptedFolder.open(CloudStore(client, where.root), "", secret, Counters(default_path()))


# --- what the plain commands do inside an encrypted folder --------------------------------------------
def target_of(folder: EncryptedFolder, where: Located, name: str, into: bool) -> str:
    """Where a file named `name` lands for a put to `where` (as `cp` decides: into a folder, or to
    the path itself)."""
    if into or not where.inner:
        return posixpath.join(where.inner, name) if where.inner else name
    entry = folder.entry(where.inner)
    return posixpath.join(where.inner, name) if entry is not None and entry["t"] == "dir" else where.inner


def put_file(
    folder: EncryptedFolder, where: Located, local: Path, into: bool
) -> tuple[str, upload.PutResult]:
    """One local file into the folder; (its plaintext path inside, what was sent)."""
    rel = target_of(folder, where, local.name, into)
    return rel, upload.put_file(folder, local, rel)


def put_tree(
    folder: EncryptedFolder, where: Located, local: Path, delete: bool = False, keep: Keep | None = None
) -> upload.PutResult:
    """A directory's contents into `where` (with `delete`, entries gone locally are removed)."""
    pairs = [
        (path, posixpath.join(where.inner, rel) if where.inner else rel)
        for path, rel in upload.local_files(local)
        if keep is None or keep(rel)
    ]
    inside = where.inner + "/" if where.inner else ""
    dirs = {where.inner} | {d for _, rel in pairs for d in ancestors(rel) if d.startswith(inside)}
    extra = [where.inner] if where.inner else []
    return upload.put_files(folder, pairs, extra_dirs=extra, keep_dirs=dirs if delete else None)


@dataclass
class Pulled:
    written: list[str]
    unchanged: int
    deleted: list[str]


def pull(
    folder: EncryptedFolder, where: Located, local: Path, delete: bool = False, keep: Keep | None = None
) -> Pulled:
    """The folder `where` into directory `local`: files whose local bytes already match (sha256)
    are not fetched; with `delete`, local files the folder does not hold are removed."""
    entry = folder.entry(where.inner)
    if entry is None or entry["t"] != "dir":
        raise HyCloudError(f"{where.root}/{where.inner} is not a folder", code="not-a-directory", status=400)
    cut = len(where.inner) + 1 if where.inner else 0
    listed = [(rel[cut:], rel, e) for rel, e in download.walk(folder, where.inner)]
    listed = [item for item in listed if keep is None or keep(item[0])]
    wanted = [
        download.Wanted(rel, local / short, int(e["v"]))
        for short, rel, e in listed
        if not _same(local / short, e)
    ]
    local.mkdir(parents=True, exist_ok=True)
    for start in range(0, len(wanted), 500):
        download.fetch(folder, wanted[start : start + 500])
    deleted = _delete_extra(local, {short for short, _, _ in listed}, keep) if delete else []
    return Pulled([w.rel for w in wanted], len(listed) - len(wanted), deleted)


def _same(path: Path, entry: dict[str, Any]) -> bool:
    if not path.is_file() or path.stat().st_size != entry.get("size"):
        return False
    return hashlib.sha256(path.read_bytes()).hexdigest() == entry.get("sha256")


def _delete_extra(local: Path, kept: set[str], keep: Keep | None) -> list[str]:
    gone = [rel for _, rel in upload.local_files(local) if rel not in kept and (keep is None or keep(rel))]
    for rel in gone:
        (local / rel).unlink()
    return gone


# --- the SDK: plain calls that go through an encrypted folder when the path is in one --------------
def put(client: HyCloud, local: Path, remote: str, key_file: Path | None = None) -> dict[str, Any]:
    """`client.put` / `client.upload_tree`, sealed on this machine when `remote` is inside an
    encrypted folder."""
    where = locate(client, remote)
    if where is None:
        if local.is_dir():
            return {"encrypted": False, "result": client.upload_tree(local, remote)}
        return {"encrypted": False, "result": client.put(local, remote)}
    folder = open_folder(client, where, key_file)
    if local.is_dir():
        return {"encrypted": True, "root": where.root, "result": vars(put_tree(folder, where, local))}
    rel, result = put_file(folder, where, local, remote.endswith("/"))
    return {"encrypted": True, "root": where.root, "path": rel, "result": vars(result)}


def get(client: HyCloud, remote: str, local: Path, key_file: Path | None = None) -> dict[str, Any]:
    """`client.get` (a file) or `client.download_tree` (a folder), decrypted and checked here when
    `remote` is inside an encrypted folder."""
    where = locate(client, remote)
    if where is None:
        if client.stat(remote)["type"] == "dir":
            return {"encrypted": False, "result": client.download_tree(remote, local)}
        return {"encrypted": False, "result": str(client.get(remote, local))}
    folder = open_folder(client, where, key_file)
    return {"encrypted": True, "root": where.root, "files": download.get(folder, where.inner, local)}


def ls(client: HyCloud, remote: str, key_file: Path | None = None) -> list[dict[str, Any]]:
    """`client.ls`, with decrypted names when `remote` is inside an encrypted folder."""
    where = locate(client, remote)
    if where is None:
        return client.ls(remote)
    return open_folder(client, where, key_file).ls(where.inner)
