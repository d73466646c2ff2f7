"""`hycloud` command line: thin commands over the SDK; errors become stable exit codes.

Habits of `cp`, `ls` and `aws s3`: a destination ending in `/` or naming an existing directory
means "into it"; `ls -l`/`stat` with `-h` for human sizes and ISO 8601 times; plain, unwrapped
lines on stdout; `--json` for scripts, errors included (`{"error": {"code", "message"}}`).

Every command starts this module, so it imports only what defines the commands and their help:
the client, the transfer and sync machinery and Rich load inside the commands that use them
(tests/unit/client/test_cli_imports.py keeps it so).
"""

from __future__ import annotations

import os
import sys
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from hycloud_core.errors import HyCloudError, NotFoundError

from ..transfer.background import settle
from ..transfer.config import TransferConfig
from . import browse, exit_codes, targets, tree_options
from . import encrypted as encrypted_cli
from .admin import admin
from .check import EPILOG as CHECK_EPILOG
from .check import check_command, hash_command
from .configure import EXAMPLES as CONFIGURE_EXAMPLES
from .configure import configure
from .encrypted import crypt, key
from .encrypted import init as crypt_init
from .history import RESTORE_EPILOG, VERSIONS_EPILOG, restore_command, versions_command
from .mount import mount_command
from .output import STATE, bars_on, echo, emit, error_json, log_requests, note, stat_lines
from .serve import serve
from .share import share_command
from .snapshot import snapshot
from .status import status_command
from .sync import EPILOG as SYNC_EPILOG
from .sync import sync_command
from .trash import trash

if TYPE_CHECKING:
    from ..progress_bar import RichProgress
    from ..sdk.client import HyCloud
    from ..sync.filters import PathFilter
    from .job_progress import FilesBar

app = typer.Typer(
    help="HyCloud: a filesystem on S3 + EFS.",
    no_args_is_help=True,
    add_completion=True,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
    epilog=(
        "Profiles: --profile NAME or $HYCLOUD_PROFILE. Exit codes: 0 ok, 1 error, 2 usage, 3 not configured, "
        "4 key refused, 5 not found, 6 conflict, 7 unreachable, 8 local I/O, 9 corrupt, 10 outcome unknown, "
        "11 quota exceeded, 12 partial (some files not sent, each named), 130 interrupted."
    ),
)
app.add_typer(admin, name="admin")
app.add_typer(trash, name="trash")
app.add_typer(snapshot, name="snapshot")
NO_H = {"help_option_names": ["--help"]}  # ls and stat take -h for human sizes, as ls does


def examples(*lines: str) -> str:
    return "Examples:\n\n" + "\n\n".join(f"  {line}" for line in lines)


def flag(*names: str, help: str) -> typer.models.OptionInfo:
    """A yes/no option with no value shown in help."""
    return typer.Option(*names, help=help, metavar="")


def _show_version(wanted: bool) -> None:
    if wanted:
        from importlib.metadata import version as package_version

        echo(f"hycloud {package_version('hycloud')}")
        raise typer.Exit()


@app.callback()
def _options(
    json_output: Annotated[
        bool, flag("--json", help="Machine-readable output on stdout, errors too.")
    ] = False,
    progress: Annotated[
        bool, flag("--progress", help="Progress bars even when stderr is not a terminal.")
    ] = False,
    verbose: Annotated[bool, flag("-v", "--verbose", help="Show each request and what was chosen.")] = False,
    quiet: Annotated[bool, flag("-q", "--quiet", help="Only errors: no progress, no messages.")] = False,
    profile: Annotated[
        str | None,
        typer.Option("--profile", metavar="NAME", help="Configuration profile (or $HYCLOUD_PROFILE)."),
    ] = None,
    bwlimit: Annotated[
        str | None,
        typer.Option(
            "--bwlimit",
            metavar="RATE",
            help="Bytes per second for all transfers of the run together: 512K, 10M, 1.5G (as rclone's).",
        ),
    ] = None,
    _version: Annotated[
        bool,
        typer.Option(
            "--version", help="Show the client version.", callback=_show_version, is_eager=True, metavar=""
        ),
    ] = False,
):
    STATE.update(json=json_output, progress=progress, verbose=verbose and not quiet, quiet=quiet)
    if profile:
        os.environ["HYCLOUD_PROFILE"] = profile  # every client this run makes uses it
    if STATE["verbose"]:
        from .. import http  # requests loads with it: only when a request is to be shown

        if log_requests not in http.SESSION_HOOKS:
            http.SESSION_HOOKS.append(log_requests)
    _limit_bandwidth(bwlimit)


def _limit_bandwidth(bwlimit: str | None) -> None:
    """Install --bwlimit's hook; without the flag, lift one an earlier run in this process set (the
    hook's module, which loads requests, is imported only if it was ever needed)."""
    if bwlimit:
        from . import bwlimit as bwlimit_hook

        bwlimit_hook.install(bwlimit_hook.parse_rate(bwlimit))
    elif (installed := sys.modules.get(f"{__package__}.bwlimit")) is not None:
        installed.install(0)


def _client(transfers: int | None = None) -> HyCloud:
    """The profile's client; `--transfers N` sets its TransferConfig's files in flight."""
    from ..sdk.client import HyCloud  # the client and its transfer machinery: when a command runs

    return (
        HyCloud.from_config(transfer=TransferConfig(files=transfers)) if transfers else HyCloud.from_config()
    )


app.command(epilog=CONFIGURE_EXAMPLES)(configure)


@app.command(epilog=examples("hycloud whoami", "hycloud --profile work whoami"))
def whoami() -> None:
    """Show the user the key belongs to."""
    user = _client().whoami()
    emit({"user": user}, user)


@app.command(
    epilog=examples(
        "hycloud mkdir /projects",
        "hycloud mkdir -p /projects/x/y   # no error if it exists",
        "hycloud mkdir --encrypted /vault  # then: hycloud crypt put|get|sync LOCAL /vault",
    )
)
def mkdir(
    path: Annotated[str, typer.Argument(metavar="PATH")],
    parents: Annotated[
        bool, flag("-p", "--parents", help="Make missing parents; no error if the directory exists.")
    ] = False,
    encrypted: Annotated[
        bool,
        flag(
            "--encrypted",
            help="An encrypted folder (as `hycloud crypt init`): contents and names encrypted on this "
            "machine, passphrase from $HYCLOUD_PASSPHRASE or asked; a lost passphrase is unrecoverable.",
        ),
    ] = False,
) -> None:
    """Create a directory (an existing one is an error unless -p)."""
    if encrypted:
        crypt_init(path)
        return
    entry = _client().mkdir(path, parents=parents, exist_ok=parents)
    emit(entry, f"created {entry['path']}")


app.command(
    context_settings=NO_H,
    epilog=examples(
        "hycloud ls /projects",
        "hycloud ls -lh /projects",
        "hycloud ls -R /projects          # every folder below too",
        "hycloud ls -l /projects/a.txt    # one file's line",
        "hycloud --json ls / | jq .",
    ),
)(browse.ls)


@app.command(
    context_settings=NO_H, epilog=examples("hycloud stat -h /projects/big.tar", "hycloud --json stat /f")
)
def stat(
    path: Annotated[str, typer.Argument(metavar="PATH")],
    human: Annotated[bool, flag("-h", "--human-readable", help="Size as 1.5K, 12M, 3.0G.")] = False,
) -> None:
    """Show a file's or directory's metadata (times in ISO 8601, UTC)."""
    entry = _client().stat(path)
    emit(entry, "\n".join(stat_lines(entry, human)))


def _following_files() -> AbstractContextManager[FilesBar]:
    """A tree job's files bar (job_progress.py, loaded only when a command needs it)."""
    from .job_progress import following_files

    return following_files()


def _bar() -> RichProgress:
    from ..progress_bar import RichProgress

    return RichProgress(enabled=bars_on())


@app.command(
    epilog=examples(
        "hycloud put notes.txt /docs/            # lands at /docs/notes.txt",
        "hycloud put -r ./site /www              # the contents of ./site into /www",
        "hycloud put -r -L ./site /www           # follow symlinks",
        "hycloud put new.iso /isos/a.iso --base old.iso   # send only a delta",
        "hycloud put -r ./src /src --exclude '*.o' --exclude build/ --include keep.o",
        "hycloud put -r -n ./site /www           # list what would be sent",
        "hycloud --bwlimit 2M put -r --transfers 8 ./photos /photos",
    )
)
def put(
    local: Annotated[Path, typer.Argument(metavar="LOCAL")],
    remote: Annotated[str, typer.Argument(metavar="REMOTE")],
    parents: Annotated[bool, flag("-p", "--parents", help="Create missing parent directories.")] = False,
    recursive: Annotated[bool, flag("-r", "--recursive", help="Upload the contents of a directory.")] = False,
    follow: Annotated[
        bool,
        flag(
            "-L", "--follow-symlinks", help="With -r: follow symlinks (else they are skipped, and said so)."
        ),
    ] = False,
    base: Annotated[
        Path | None,
        typer.Option(metavar="OLD", help="Local copy of the version the cloud has: upload a delta."),
    ] = None,
    delta_kind: Annotated[
        str, typer.Option(metavar="KIND", help="'version' (zstd patch-from) or 'rsync'.")
    ] = "version",
    force_delta: Annotated[
        bool, flag("--force-delta", help="Send the delta even when eq. 2 says not to.")
    ] = False,
    via: Annotated[
        str,
        typer.Option(
            metavar="WAY", help="Large files: 'auto' (eq. 2 with measured rates), 'direct' or 'delta'."
        ),
    ] = "auto",
    coded: Annotated[
        bool,
        flag(
            "--coded",
            help="Large files: erasure-code across the instances (RS(3,2) with three); by default "
            "files above the deployment's coded threshold are, with three or more instances.",
        ),
    ] = False,
    plain: Annotated[
        bool, flag("--plain", help="Large files: never erasure-coded (one copy in S3).")
    ] = False,
    dry_run: tree_options.DryRun = False,
    exclude: tree_options.Exclude = None,
    include: tree_options.Include = None,
    transfers: tree_options.Transfers = None,
) -> None:
    """Upload a file (or, with -r, a directory's contents); into REMOTE if it ends in / or is a directory.
    A tree goes on past a file it cannot send, names it, and ends with a summary (exit 12 when some
    files were not sent)."""
    if via not in ("auto", "direct", "delta"):
        raise HyCloudError("--via is 'auto', 'direct' or 'delta'", code="bad-usage", status=400)
    if coded and plain:
        raise HyCloudError("--coded and --plain exclude each other", code="bad-usage", status=400)
    keep, transfers = tree_options.path_filter(exclude, include), tree_options.check_transfers(transfers)
    client = _client(transfers)
    if encrypted_cli.routed_put(client, local, remote, recursive, keep, dry_run):
        return  # inside an encrypted folder: sealed here, never stored as plaintext
    bar = _bar()
    try:
        if local.is_dir():
            if not recursive:
                raise HyCloudError(f"{local} is a directory (use -r)", code="is-a-directory", status=400)
            from . import tree_commands

            tree_commands.upload(client, local, remote, bar, follow, _skipped, keep, dry_run, transfers)
            return
        if not local.is_file():
            raise HyCloudError(f"{local} is not a file", code="no-such-local-file", status=400)
        target = targets.remote(client, local.name, remote)
        if _left_out(keep, local.name) or dry_run:
            return emit(
                {"path": target, "local": str(local), "dry_run": dry_run}, _not_done(local, target, dry_run)
            )
        from ..sdk.trees import kept_metadata

        entry = client.put(
            local,
            target,
            parents=parents,
            progress=bar,
            base=base,
            delta_kind=delta_kind,
            force_delta=force_delta,
            via=via,
            coded=False if plain else (True if coded else None),
            **kept_metadata(local),  # as put -r keeps them
        )
        settle()
    finally:
        bar.close()
    how = f"delta {entry['kind']}" if "kind" in entry else entry.get("storage", "small")
    how = f"coded RS({entry['coded']['n']},{entry['coded']['k']})" if "coded" in entry else how
    mode = f", mode {entry['mode']}" if STATE["verbose"] and "mode" in entry else ""
    emit(entry, f"uploaded {local} -> {entry['path']} ({entry['size']} bytes, {how}{mode})")


def _skipped(item: Path) -> None:
    note(f"skipped symlink {item}; use -L to follow")


def _left_out(keep, name: str) -> bool:
    """A single file --exclude leaves out (said so, not an error: rclone's way)."""
    return keep is not None and not keep.keeps_file(name)


def _not_done(src, dst, dry_run: bool, verb: str = "upload") -> str:
    return f"would {verb} {src} -> {dst}" if dry_run else f"{src}: left out by --exclude; nothing done"


@app.command(
    epilog=examples(
        "hycloud get /docs/notes.txt .           # lands at ./notes.txt",
        "hycloud get -r /www ./site              # the contents of /www into ./site",
        "hycloud get /isos/a.iso a.iso --via delta",
        "hycloud get /data.csv - | head          # to stdout",
        "hycloud get -r /www ./site --exclude '*.log' --dry-run",
    )
)
def get(
    remote: Annotated[str, typer.Argument(metavar="REMOTE")],
    local: Annotated[str, typer.Argument(metavar="LOCAL")],
    recursive: Annotated[
        bool, flag("-r", "--recursive", help="Download the contents of a directory.")
    ] = False,
    via: Annotated[
        str,
        typer.Option(
            metavar="WAY",
            help="Large files: 'auto' (eq. 2 with measured rates), 'direct' (S3), 'relay' (EFS) or 'delta'.",
        ),
    ] = "auto",
    base: Annotated[
        Path | None, typer.Option(metavar="OLD", help="An older local version to download a delta against.")
    ] = None,
    dry_run: tree_options.DryRun = False,
    exclude: tree_options.Exclude = None,
    include: tree_options.Include = None,
    transfers: tree_options.Transfers = None,
) -> None:
    """Download a file (or, with -r, a directory's contents); into LOCAL if it is a directory, to
    stdout if LOCAL is -. `--via delta` patches the existing local file; `auto` does when eq. 2
    says it pays."""
    if via not in ("auto", "direct", "relay", "delta"):
        raise HyCloudError("--via is 'auto', 'direct', 'relay' or 'delta'", code="bad-usage", status=400)
    keep, transfers = tree_options.path_filter(exclude, include), tree_options.check_transfers(transfers)
    client = _client(transfers)
    if recursive and encrypted_cli.routed_get(client, remote, local, recursive, keep, dry_run):
        return  # an encrypted folder's tree: each file checked and decrypted here
    try:
        _plain_get(client, remote, local, recursive, keep, dry_run, transfers, via, base)
    except NotFoundError:  # a file's plaintext name is stored nowhere: in an encrypted folder?
        if recursive or not encrypted_cli.routed_get(client, remote, local, recursive, keep, dry_run):
            raise


def _plain_get(
    client: HyCloud,
    remote: str,
    local: str,
    recursive: bool,
    keep: PathFilter | None,
    dry_run: bool,
    transfers: int | None,
    via: str,
    base: Path | None,
) -> None:
    """`hycloud get` of what is stored under its own name (every path outside encrypted folders):
    a single file costs no request to look for an encrypted folder first."""
    if local == "-" and not recursive and not dry_run:  # stdout, as cp and aws s3 cp take "-"
        if not _left_out(keep, targets.basename(remote)):
            browse.copy_to(client, remote, sys.stdout.buffer)
        return
    bar = _bar()
    try:
        if recursive:
            from . import tree_commands

            tree_commands.download(client, remote, local, bar, keep, dry_run, transfers)
            return
        target = targets.local(remote, local)
        if _left_out(keep, targets.basename(remote)) or dry_run:
            client.stat(remote)  # a missing file is an error, dry or not
            return emit(
                {"path": str(target), "remote": remote, "dry_run": dry_run},
                _not_done(remote, target, dry_run, "download"),
            )
        if local.endswith(("/", os.sep)):  # "into this folder", as aws s3 cp: made if missing
            target.parent.mkdir(parents=True, exist_ok=True)
        try:
            path = client.get(remote, target, progress=bar, via=via, base=base)
        except HyCloudError as e:
            if e.code == "is-a-directory":
                raise HyCloudError(
                    f"{remote} is a directory; use -r", code="is-a-directory", status=400
                ) from None
            raise
        settle()
    finally:
        bar.close()
    mode = client.last_transfer.get("mode", "")
    if STATE["verbose"] and "queue" in client.last_transfer:
        place = client.last_transfer["queue"]
        mode += (
            f", queued at position {place['position']}, estimated start in {place['estimated_start_s']:.1f} s"
        )
    emit(
        {"path": str(path), "size": path.stat().st_size, **client.last_transfer},
        f"downloaded {remote} -> {path}" + (f" (mode {mode})" if STATE["verbose"] and mode else ""),
    )


@app.command(epilog=examples("hycloud rm /docs/old.txt", "hycloud rm -r /scratch"))
def rm(
    path: Annotated[str, typer.Argument(metavar="PATH")],
    recursive: Annotated[
        bool, flag("-r", "--recursive", help="Remove a directory and its contents.")
    ] = False,
) -> None:
    """Move a file (or, with -r, a directory tree) into the trash (`hycloud trash ls`)."""
    client = _client()
    if recursive or client.stat(path)["type"] == "dir":
        with _following_files() as bar:
            result = client.rmdir(path, recursive=recursive, progress=bar)
        emit(result, f"removed {path} ({_files(result)})" + _trashed(result))
    else:
        result = client.rm(path)
        emit(result, f"removed {path}" + _trashed(result))


def _files(result: dict) -> str:
    """How many files a removal took; a large tree's are counted after it (`hycloud trash ls`)."""
    return (
        "files still being counted"
        if (result.get("trash") or {}).get("pending")
        else f"{result['files']} files"
    )


def _trashed(result: dict) -> str:
    """Where a removal went: the trash item to restore (none from a cloud before the trash)."""
    item = result.get("trash")
    return f" to the trash: hycloud trash restore {item['item']}" if item else ""


@app.command(epilog=examples("hycloud rmdir /empty", "hycloud rmdir -r /scratch"))
def rmdir(
    path: Annotated[str, typer.Argument(metavar="PATH")],
    recursive: Annotated[
        bool, flag("-r", "--recursive", help="Remove the directory's contents too.")
    ] = False,
) -> None:
    """Remove an empty directory (with -r, a directory tree)."""
    with _following_files() as bar:
        result = _client().rmdir(path, recursive=recursive, progress=bar)
    emit(result, f"removed {path}" + (f" ({_files(result)})" if recursive else ""))


@app.command(
    epilog=examples(
        "hycloud mv /a.txt /b.txt                # rename",
        "hycloud mv /a.txt /docs/                # lands at /docs/a.txt",
        "hycloud mv /photos /archive             # /archive exists: lands at /archive/photos",
    )
)
def mv(
    src: Annotated[str, typer.Argument(metavar="SRC")], dst: Annotated[str, typer.Argument(metavar="DST")]
) -> None:
    """Move or rename a file or directory; into DST if it ends in / or is a directory."""
    client = _client()
    if encrypted_cli.routed_copy(client, src, dst, move=True):
        return  # an end inside an encrypted folder: its names and contents sealed here
    target = targets.remote_op(client, "move", src, dst)
    with _following_files() as bar:
        entry = client.mv(src, target, progress=bar)
    emit(entry, f"moved {src} -> {entry['path']}")


@app.command(
    epilog=examples(
        "hycloud cp /a.txt /docs/                # lands at /docs/a.txt",
        "hycloud cp -r /photos /backup/          # lands at /backup/photos",
        "hycloud cp -r /photos /backup/ --exclude '*.raw'   # file by file, filtered",
    )
)
def cp(
    src: Annotated[str, typer.Argument(metavar="SRC")],
    dst: Annotated[str, typer.Argument(metavar="DST")],
    recursive: Annotated[
        bool, flag("-r", "--recursive", help="Accepted; folders are always copied whole.")
    ] = False,
    dry_run: tree_options.DryRun = False,
    exclude: tree_options.Exclude = None,
    include: tree_options.Include = None,
    transfers: tree_options.Transfers = None,
) -> None:
    """Copy a file or directory (large files are shared, not copied); into DST if it ends in / or is a directory.
    With --exclude/--include or --dry-run a folder is copied file by file."""
    keep, transfers = tree_options.path_filter(exclude, include), tree_options.check_transfers(transfers)
    client = _client(transfers)
    if encrypted_cli.routed_copy(client, src, dst, move=False, dry_run=dry_run, filtered=keep is not None):
        return  # an end inside an encrypted folder: chunks reused within it, else sealed here
    target = targets.remote_op(client, "copy", src, dst)
    if (keep is not None or dry_run) and client.stat(src)["type"] == "dir":
        from . import tree_commands

        return tree_commands.copy(client, src, target, keep, dry_run, transfers)
    if _left_out(keep, targets.basename(src)) or dry_run:
        return emit({"path": target, "src": src, "dry_run": dry_run}, _not_done(src, target, dry_run, "copy"))
    with _following_files() as bar:
        entry = client.cp(src, target, progress=bar)
    emit(entry, f"copied {src} -> {entry['path']}")


@app.command(epilog=examples("hycloud usage", "hycloud --json usage | jq .costs"))
def usage() -> None:
    """Show what your files occupy in EFS and S3 and their monthly cost, beside all-S3, all-EFS
    and Amazon S3 Files."""
    from .usage import usage_command  # Rich's tables and the cost model: only for `usage`

    usage_command(STATE["json"])


app.command(epilog=examples("hycloud cat /notes/a.txt", "hycloud cat /logs/x.gz | gunzip | less"))(browse.cat)
app.command(
    epilog=examples(
        "hycloud head /logs/app.log", "hycloud head -n 3 /data.csv", "hycloud head -c 512 /img.bin"
    )
)(browse.head)
app.command(
    context_settings=NO_H,
    epilog=examples(
        "hycloud du -sh /projects", "hycloud du -h -d 1 /", "hycloud --json du -s / | jq '.[0].bytes'"
    ),
)(browse.du)
app.command(context_settings=NO_H, epilog=examples("hycloud tree /projects", "hycloud tree -L 2 -h /"))(
    browse.tree
)
app.command(
    epilog=examples(
        "hycloud find /projects --name '*.py'",
        "hycloud find / --type d --maxdepth 2",
        "hycloud find /logs --mmin 60       # changed in the last hour",
    )
)(browse.find)
app.command(epilog=examples("hycloud touch /flags/done", "hycloud touch -p /new/folder/.keep"))(browse.touch)
app.command("check", epilog=CHECK_EPILOG)(check_command)
app.command(
    "hash",
    epilog=examples(
        "hycloud hash big.iso                  # compare with: hycloud stat /isos/big.iso",
        "hycloud hash --sha256 notes.txt       # the same line as: sha256sum notes.txt",
    ),
)(hash_command)
app.add_typer(serve, name="serve")
app.add_typer(crypt, name="crypt")
app.add_typer(key, name="key")
app.command("mount")(mount_command)
app.command("share")(share_command)
app.command("versions", context_settings=NO_H, epilog=VERSIONS_EPILOG)(versions_command)
app.command("restore", epilog=RESTORE_EPILOG)(restore_command)
app.command("sync", epilog=SYNC_EPILOG)(sync_command)
app.command("status", epilog=examples("hycloud status", "hycloud --json status | jq .standby.lag_s"))(
    status_command
)

INTERRUPTED = "interrupted; run the same command again to resume"


def _fail(message: str, code: int, error_code: str, plain: bool = False) -> None:
    """One line on stderr, whatever the message holds (with --json the error on stdout too), then exit."""
    line = " ".join(message.split())
    if STATE["json"]:
        echo(error_json(error_code, line))
    sys.stderr.write((line if plain else f"error [{error_code}]: {line}") + "\n")
    sys.exit(code)


def _fail_error(e: HyCloudError) -> None:
    _fail(e.message, exit_codes.for_error(e.code, e.status), e.code)


def _usage_error(e: typer.TyperException) -> None:
    if STATE["json"]:
        echo(error_json("bad-usage", " ".join(e.format_message().split())))
    if hasattr(e, "show"):
        e.show()  # click's short usage, "Try 'hycloud -h' for help", and the error
        sys.exit(e.exit_code)
    _fail(e.format_message(), e.exit_code, "bad-usage")


def main(argv: list[str] | None = None) -> None:
    """Run the CLI: every failure ends as one line on stderr (or click's short usage) and an exit
    code from `exit_codes`. Typer's own runner is bypassed because it turns Ctrl-C into a silent
    exit status and lets usage errors escape as tracebacks when not in standalone mode."""
    command = typer.main.get_command(app)
    args = list(sys.argv[1:] if argv is None else argv)
    STATE["json"] = "--json" in args  # until the options are parsed: a usage error is JSON too
    command._main_shell_completion({}, "hycloud")  # answers the shell's `_HYCLOUD_COMPLETE=…` and exits
    try:
        with command.make_context("hycloud", args) as ctx:
            command.invoke(ctx)
    except typer.Exit as e:
        sys.exit(e.exit_code)
    except typer.Abort:
        _fail("aborted", exit_codes.ERROR, "aborted", plain=True)
    except KeyboardInterrupt:
        _fail(INTERRUPTED, exit_codes.INTERRUPTED, "interrupted", plain=True)
    except typer.TyperException as e:  # click's usage errors (typer's own copy of click)
        _usage_error(e)
    except HyCloudError as e:
        _fail_error(e)
    except BrokenPipeError:  # stdout closed early (`hycloud ls | head`): not an error to report
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(exit_codes.ERROR)
    except OSError as e:  # requests' errors are OSErrors too: the endpoint, not the disk
        if _request_error(e):
            _fail(str(e), exit_codes.UNREACHABLE, "unreachable")
        _fail(str(e), exit_codes.LOCAL_IO, "local-io")


def _request_error(e: OSError) -> bool:
    """Whether requests raised it; a run that never imported requests made no request."""
    requests = sys.modules.get("requests")
    return requests is not None and isinstance(e, requests.RequestException)


if __name__ == "__main__":
    main()
