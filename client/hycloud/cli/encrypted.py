"""`hycloud crypt ...` and `hycloud key rotate`: encrypted folders, done on the client.

Contents and names are encrypted before they leave this machine (docs/ENCRYPTION.md); the cloud
stores ciphertext only. The passphrase (or key file) is never sent anywhere and never stored:
lose it and the folder's contents are gone for good. Nobody, the operator included, can recover it.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from hycloud_core.errors import BadRequestError as BadRequest
from hycloud_core.errors import NotFoundError as NotFound

from . import exit_codes
from .output import STATE, echo, emit, error_json

if TYPE_CHECKING:
    from ..encrypted import EncryptedFolder
    from ..encrypted.routing import Located
    from ..sdk.client import HyCloud
    from ..sync.filters import PathFilter

WARNING = (
    "A lost passphrase or key file is unrecoverable: nobody, the operator included, can decrypt "
    "the folder without it. Passphrase: --key-file FILE, else $HYCLOUD_PASSPHRASE, else a prompt."
)

crypt = typer.Typer(
    help="Encrypted folders: contents and names encrypted on this machine. " + WARNING,
    no_args_is_help=True,
)
key = typer.Typer(help="Keys of encrypted folders. " + WARNING, no_args_is_help=True)

KeyFile = Annotated[
    Path | None,
    typer.Option(
        "--key-file",
        metavar="FILE",
        help="Read the secret from FILE (at least 16 bytes) instead of a passphrase.",
    ),
]
Dir = Annotated[str, typer.Argument(metavar="DIR", help="The encrypted folder on the cloud.")]


@contextmanager
def _refusals() -> Iterator[None]:
    """Altered, swapped, cut or rolled-back objects end the run with exit 9 (corrupt)."""
    from hycloud_core.crypto.errors import CryptoError, KeyUnavailableError, WrongKeyError

    try:
        yield
    except (WrongKeyError, KeyUnavailableError):
        raise
    except CryptoError as err:
        line = " ".join(err.message.split())
        if STATE["json"]:
            echo(error_json(err.code, line))
        sys.stderr.write(f"error [{err.code}]: {line}\n")
        raise typer.Exit(exit_codes.CORRUPT) from err


def _opened(remote: str, key_file: Path | None, secret: bytes | None = None) -> EncryptedFolder:
    """The folder opened with the secret (each key slot tried: no request to learn the user)."""
    from ..encrypted import CloudStore, EncryptedFolder
    from ..encrypted.counters import Counters, default_path
    from ..encrypted.passphrase import read_secret
    from ..sdk.client import HyCloud

    client = HyCloud.from_config()
    store = CloudStore(client, remote)
    secret = secret if secret is not None else read_secret(key_file)
    with _refusals():  # an altered or rolled-back header: exit 9 too
        return EncryptedFolder.open(store, "", secret, Counters(default_path()))


def _run(action: Callable[[], object]) -> object:
    with _refusals():
        return action()


@crypt.command("init")
def init(remote: Dir, key_file: KeyFile = None) -> None:
    """Make DIR an encrypted folder (created if missing). A lost passphrase is unrecoverable."""
    from ..encrypted import CloudStore, EncryptedFolder
    from ..encrypted.counters import Counters, default_path
    from ..encrypted.passphrase import read_secret
    from ..sdk.client import HyCloud

    client = HyCloud.from_config()
    client.mkdir(remote, parents=True)
    folder = EncryptedFolder.create(
        CloudStore(client, remote),
        client.whoami(),
        read_secret(key_file, new=True),
        counters=Counters(default_path()),
    )
    emit({"path": remote, "folder_id": folder.header.folder_id.hex()}, f"encrypted folder {remote}")


@crypt.command("put")
def put(
    local: Annotated[Path, typer.Argument(metavar="LOCAL", exists=True)],
    remote: Dir,
    inner: Annotated[str | None, typer.Option("--as", metavar="PATH", help="Path inside the folder.")] = None,
    key_file: KeyFile = None,
) -> None:
    """Upload a file or a directory's contents into the encrypted folder (only new chunks are sent)."""
    from ..encrypted import upload

    folder = _opened(remote, key_file)
    if local.is_dir():
        result = _run(lambda: upload.put_tree(folder, local, inner or ""))
    else:
        result = _run(lambda: upload.put_file(folder, local, inner or local.name))
    _report(result)


@crypt.command("sync")
def sync(
    local: Annotated[Path, typer.Argument(metavar="LOCAL", exists=True, file_okay=False)],
    remote: Dir,
    key_file: KeyFile = None,
) -> None:
    """Make the encrypted folder hold exactly LOCAL's tree: changed files sent, removed ones removed."""
    from ..encrypted import upload

    folder = _opened(remote, key_file)
    _report(_run(lambda: upload.put_tree(folder, local, "", delete=True)))


def _report(result: object) -> None:
    data = dict(vars(result))
    data.pop("sent_paths", None)
    emit(
        data,
        f"{data['files']} files sent, {data['unchanged']} unchanged; {data['chunks_sent']} chunks sent, "
        f"{data['chunks_reused']} already stored; {data['bytes_sent']} bytes",
    )


@crypt.command("get")
def get(
    remote: Dir,
    local: Annotated[Path, typer.Argument(metavar="LOCAL")],
    inner: Annotated[str, typer.Option("--path", metavar="PATH", help="A file or folder inside.")] = "",
    key_file: KeyFile = None,
) -> None:
    """Download and decrypt (a file or folder of) the encrypted folder; every object is checked first."""
    from ..encrypted import download

    folder = _opened(remote, key_file)
    count = _run(lambda: download.get(folder, inner, local))
    emit({"files": count, "local": str(local)}, f"{count} files to {local}")


@crypt.command("ls")
def ls(
    remote: Dir,
    inner: Annotated[str, typer.Argument(metavar="PATH", help="A folder inside.")] = "",
    key_file: KeyFile = None,
) -> None:
    """List a folder of the encrypted folder with its decrypted names."""
    folder = _opened(remote, key_file)
    entries = _run(lambda: folder.ls(inner))
    assert isinstance(entries, list)
    emit(entries, "\n".join(e["name"] + ("/" if e["type"] == "dir" else "") for e in entries))


@crypt.command("share")
def share(
    path: Annotated[str, typer.Argument(metavar="DIR/FILE", help="A file inside an encrypted folder.")],
    expires: Annotated[str, typer.Option("--expires", "-e", help="Lifetime: 30m, 12h, 1d (max 30d).")] = "1d",
    web_url: Annotated[
        str | None,
        typer.Option("--web-url", envvar="HYCLOUD_WEB_URL", metavar="URL", help="The web app's address."),
    ] = None,
    key_file: KeyFile = None,
) -> None:
    """A link that decrypts FILE in the browser: re-encrypted under a fresh key that is only in the
    URL's fragment (never sent to the server). Anyone with the URL can read the file until it
    expires; `hycloud share --revoke ID` ends it sooner."""
    from hycloud_core.errors import BadRequestError
    from hycloud_core.share_links import parse_duration

    from ..encrypted import share as sharing
    from ..sdk.client import HyCloud

    if not web_url:
        raise BadRequestError("give --web-url URL or set $HYCLOUD_WEB_URL (the web app)", code="bad-usage")
    expires_in = parse_duration(expires)
    client = HyCloud.from_config()
    remote, inner = sharing.folder_of(client, path)
    folder = _opened(remote, key_file)
    made = _run(lambda: sharing.share(client, remote, folder, inner, expires_in, web_url))
    assert isinstance(made, sharing.MadeShare)
    emit({**made.share, "stored": made.stored, "url": made.url}, made.url)


@key.command("rotate")
def rotate(
    remote: Dir,
    key_file: KeyFile = None,
    new_key_file: Annotated[
        Path | None, typer.Option("--new-key-file", metavar="FILE", help="The new secret from FILE.")
    ] = None,
) -> None:
    """Re-wrap DIR's folder key under a new passphrase (or key file); nothing is re-encrypted.
    The old passphrase stops opening the folder. The new one, if lost, is unrecoverable.
    New passphrase: --new-key-file, else $HYCLOUD_NEW_PASSPHRASE, else a prompt."""
    from ..encrypted.passphrase import NEW_ENV, read_secret
    from ..sdk.client import HyCloud

    secret = read_secret(key_file)
    folder = _opened(remote, key_file, secret)
    new = read_secret(new_key_file, env=NEW_ENV, new=True)
    label = HyCloud.from_config().whoami()  # this user's slot gets the new secret
    epoch = _run(lambda: folder.rotate(label, secret, new))
    emit({"path": remote, "epoch": epoch}, f"key of {remote} re-wrapped (epoch {epoch})")


@crypt.command("gc")
def gc(
    remote: Dir,
    grace: Annotated[
        str,
        typer.Option("--grace", metavar="AGE", help="Keep chunks written within AGE: 12h, 1d (default), 7d."),
    ] = "1d",
    dry_run: Annotated[
        bool, typer.Option("--dry-run", "-n", help="Count what would go; remove nothing.")
    ] = False,
    key_file: KeyFile = None,
) -> None:
    """Remove the chunks no file of DIR names any more (left by sync --delete and new versions),
    once older than --grace. An upload in flight is never cut short: its reused chunks are spared,
    and a collection that meets one removes nothing that run."""
    from ..encrypted import collect

    grace_s = _seconds(grace)
    folder = _opened(remote, key_file)
    done = _run(lambda: collect.collect(folder, grace_s, dry_run))
    assert isinstance(done, collect.Collected)
    data = {**vars(done), "removed": len(done.removed)}
    verb = "would remove" if dry_run else "removed"
    why = "; an upload was in flight, nothing removed (run again)" if done.deferred else ""
    emit(
        data,
        f"{verb} {len(done.removed)} of {done.chunks} chunks ({done.referenced} in use, {done.young} younger "
        f"than {grace}, {done.touched} reused by uploads in flight){why}",
    )


def _seconds(text: str) -> float:
    """`90s`, `15m`, `12h`, `1d`, `2w` (a bare number is seconds)."""
    import re

    found = re.fullmatch(r"(\d+)([smhdw]?)", text.strip().lower())
    if not found:
        raise BadRequest(f"{text!r} is not an age like 12h, 1d or 2w", code="bad-duration")
    unit = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}[found.group(2)]
    return float(int(found.group(1)) * unit)


@crypt.command("add-user")
def add_user(
    remote: Dir,
    user: Annotated[str, typer.Argument(metavar="USER", help="A user of this deployment.")],
    key_file: KeyFile = None,
    user_key_file: Annotated[
        Path | None,
        typer.Option("--user-key-file", metavar="FILE", help="USER's secret from FILE (at least 16 bytes)."),
    ] = None,
) -> None:
    """Give USER a key slot of DIR: the folder key wrapped under a secret for them (nothing is
    re-encrypted). Hand them the secret out of band; `hycloud key rotate DIR` run as USER replaces
    it with their own. USER's secret: --user-key-file, else $HYCLOUD_NEW_PASSPHRASE, else a prompt.
    An unknown user is refused (exit 5)."""
    from ..encrypted.passphrase import NEW_ENV, read_secret
    from ..encrypted.users import require_user
    from ..sdk.client import HyCloud

    require_user(HyCloud.from_config(), user)
    secret = read_secret(key_file)
    folder = _opened(remote, key_file, secret)
    theirs = read_secret(user_key_file, env=NEW_ENV, new=True, what=remote)
    epoch = _run(lambda: folder.add_user(user, secret, theirs))
    emit({"path": remote, "user": user, "epoch": epoch}, f"{user} can now open {remote} (epoch {epoch})")


# --- the plain commands, when their cloud path is inside an encrypted folder ----------------------
def _located(client: HyCloud, remote: str) -> tuple[Located, EncryptedFolder] | None:
    """The encrypted folder `remote` is in, opened (exit 4 without a key); None: not in one."""
    from ..encrypted import routing

    where = routing.locate(client, remote)
    if where is None:
        return None
    with _refusals():
        return where, routing.open_folder(client, where)


def routed_put(
    client: HyCloud, local: Path, remote: str, recursive: bool, keep: PathFilter | None, dry_run: bool
) -> bool:
    """`hycloud put` into an encrypted folder: sealed here, only new chunks sent. False: `remote`
    is not inside one (the plain put goes on)."""
    from ..encrypted import routing

    found = _located(client, remote)
    if found is None:
        return False
    where, folder = found
    if local.is_dir() and not recursive:
        raise BadRequest(f"{local} is a directory (use -r)", code="is-a-directory")
    if dry_run:
        emit(
            {"path": remote, "local": str(local), "dry_run": True, "encrypted": True},
            f"would encrypt {local} -> {remote}",
        )
        return True
    if local.is_dir():
        test = keep.keeps_file if keep is not None else None
        _report(_run(lambda: routing.put_tree(folder, where, local, keep=test)))
    elif keep is None or keep.keeps_file(local.name):
        _report(_run(lambda: routing.put_file(folder, where, local, remote.endswith("/"))[1]))
    return True


def routed_get(
    client: HyCloud, remote: str, local: str, recursive: bool, keep: PathFilter | None, dry_run: bool
) -> bool:
    """`hycloud get` from an encrypted folder: every object checked, then decrypted here."""
    from ..encrypted import download, routing
    from .targets import local as local_target

    found = _located(client, remote)
    if found is None:
        return False
    where, folder = found
    entry = _run(lambda: folder.entry(where.inner))
    if not isinstance(entry, dict):
        raise NotFound(f"{remote} is not in the encrypted folder {where.root}")
    if entry["t"] == "dir" and not recursive:
        raise BadRequest(f"{remote} is a directory; use -r", code="is-a-directory")
    if dry_run:
        emit(
            {"path": local, "remote": remote, "dry_run": True, "encrypted": True},
            f"would decrypt {remote} -> {local}",
        )
        return True
    if entry["t"] == "file" and local == "-":
        _to_stdout(folder, where.inner)
        return True
    if entry["t"] == "file":
        target = local_target(remote, local)
        target.parent.mkdir(parents=True, exist_ok=True)
        _run(lambda: download.get(folder, where.inner, target))
        emit(
            {"path": str(target), "size": target.stat().st_size, "encrypted": True},
            f"decrypted {remote} -> {target}",
        )
        return True
    test = keep.keeps_file if keep is not None else None
    pulled = _run(lambda: routing.pull(folder, where, Path(local), keep=test))
    assert isinstance(pulled, routing.Pulled)
    emit(
        {"files": len(pulled.written), "unchanged": pulled.unchanged, "local": local, "encrypted": True},
        f"{len(pulled.written)} files decrypted to {local}, {pulled.unchanged} already there",
    )
    return True


def routed_copy(
    client: HyCloud, src: str, dst: str, move: bool, dry_run: bool = False, filtered: bool = False
) -> bool:
    """`hycloud cp`/`mv` with an end inside an encrypted folder (encrypted/crossing.py): within
    one folder only manifests and name maps are written (every chunk reused); across keys the
    files are decrypted and sealed again here. False: the plain cp/mv does it."""
    from ..encrypted import crossing

    ends = crossing.locate_both(client, src, dst)
    if ends.plain:
        return False
    verb = "move" if move else "copy"
    if filtered:
        raise BadRequest(
            f"--exclude/--include are not supported for a {verb} in an encrypted folder", code="bad-usage"
        )
    if dry_run:
        emit({"src": src, "dst": dst, "dry_run": True, "encrypted": True}, f"would {verb} {src} -> {dst}")
        return True
    opener = crossing.folder_opener(client)
    done = _run(lambda: crossing.copy_or_move(client, src, dst, ends, move, opener))
    assert isinstance(done, dict)
    how = "chunks reused" if done["reused"] else "decrypted and sealed again here"
    emit(done, f"{'moved' if move else 'copied'} {src} -> {done['path']} ({how})")
    return True


def _to_stdout(folder: EncryptedFolder, inner: str) -> None:
    import tempfile

    from ..encrypted import download

    with tempfile.TemporaryDirectory(prefix="hycloud-enc-") as tmp:
        plain = Path(tmp) / "plain"
        _run(lambda: download.get(folder, inner, plain))
        sys.stdout.buffer.write(plain.read_bytes())
        sys.stdout.buffer.flush()


def routed_ls(client: HyCloud, remote: str) -> bool:
    """`hycloud ls` inside an encrypted folder: the decrypted names from its name map."""
    found = _located(client, remote)
    if found is None:
        return False
    where, folder = found
    entries = _run(lambda: folder.ls(where.inner))
    assert isinstance(entries, list)
    emit(entries, "\n".join(e["name"] + ("/" if e["type"] == "dir" else "") for e in entries))
    return True


def routed_sync(
    client: HyCloud,
    direction: str,
    local: Path,
    remote: str,
    delete: bool,
    keep: PathFilter | None,
    dry_run: bool,
    watching: bool = False,
) -> bool:
    """`hycloud sync` with an encrypted folder on the cloud side: push seals and sends what changed
    (sha256), pull fetches what differs locally; `--delete` removes what the source lacks. Newer
    wins: the encrypted engine keeps no sync state to tell a conflict."""
    from ..encrypted import routing

    found = _located(client, remote)
    if found is None:
        return False
    where, folder = found
    if dry_run or watching:
        raise BadRequest("--dry-run and --watch are not supported with an encrypted folder", code="bad-usage")
    if delete and keep is not None:
        raise BadRequest("--delete with --exclude is not supported in an encrypted folder", code="bad-usage")
    test = keep.keeps_file if keep is not None else None
    if direction == "push":
        _report(_run(lambda: routing.put_tree(folder, where, local, delete=delete, keep=test)))
        return True
    pulled = _run(lambda: routing.pull(folder, where, local, delete=delete, keep=test))
    assert isinstance(pulled, routing.Pulled)
    emit(
        {"files": len(pulled.written), "unchanged": pulled.unchanged, "deleted": pulled.deleted},
        f"{len(pulled.written)} files decrypted, {pulled.unchanged} unchanged, {len(pulled.deleted)} deleted",
    )
    return True
