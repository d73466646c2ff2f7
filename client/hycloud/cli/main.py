"""`hycloud` command line: thin commands over the SDK; errors become stable exit codes."""

from __future__ import annotations

import json
import os
import sys
from datetime import UTC, datetime
from importlib.metadata import version as package_version
from pathlib import Path
from typing import Annotated

import requests
import typer
from rich.console import Console
from rich.table import Table

from hycloud_core.errors import HyCloudError

from ..config import ClientConfig, endpoint_from_outputs
from ..sdk import HyCloud
from ..transfer.auto import settle
from ..transfer.delta import wait_for_adaptation
from . import exit_codes, tree
from .admin import admin
from .job_progress import FilesBar, following
from .mount import mount_command
from .progress_bar import RichProgress
from .serve import serve
from .usage import usage_command

app = typer.Typer(
    help="HyCloud: a filesystem on S3 + EFS.",
    no_args_is_help=True,
    add_completion=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)
app.add_typer(admin, name="admin")
app.add_typer(serve, name="serve")
app.command("mount")(mount_command)
out = Console()
err = Console(stderr=True)
STATE = {"json": False, "progress": False}


def _show_version(wanted: bool) -> None:
    if wanted:
        out.print(f"hycloud {package_version('hycloud')}", highlight=False)
        raise typer.Exit()


@app.callback()
def _options(
    json_output: Annotated[bool, typer.Option("--json", help="Machine-readable output on stdout.")] = False,
    progress: Annotated[
        bool, typer.Option("--progress", help="Progress bars even when stderr is not a terminal.")
    ] = False,
    _version: Annotated[
        bool,
        typer.Option("--version", help="Show the client version.", callback=_show_version, is_eager=True),
    ] = False,
):
    STATE["json"], STATE["progress"] = json_output, progress


def _emit(data: object, human: str | None = None) -> None:
    if STATE["json"]:
        out.print_json(json.dumps(data))
    elif human is not None:
        out.print(human, highlight=False)


def _client() -> HyCloud:
    return HyCloud.from_config()


@app.command()
def configure(
    endpoint: Annotated[str | None, typer.Option(help="API URL.")] = None,
    outputs: Annotated[
        Path | None, typer.Option(help="`cdk deploy --outputs-file` JSON to take the URL from.")
    ] = None,
    key: Annotated[str, typer.Option(help="API key.", prompt=True, hide_input=True)] = ...,
) -> None:
    """Save the endpoint and API key."""
    url = endpoint or (endpoint_from_outputs(outputs) if outputs else None)
    if not url:
        raise HyCloudError("give --endpoint or --outputs", code="bad-usage", status=400)
    path = ClientConfig(endpoint=url, api_key=key).save()
    _emit({"config": str(path), "endpoint": url}, f"saved {path}")


@app.command()
def whoami() -> None:
    """Show the user the key belongs to."""
    user = _client().whoami()
    _emit({"user": user}, user)


@app.command()
def mkdir(path: str, parents: Annotated[bool, typer.Option("-p", "--parents")] = False) -> None:
    """Create a directory."""
    entry = _client().mkdir(path, parents=parents)
    _emit(entry, f"created {entry['path']}")


def _when(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d %H:%M:%S")


@app.command()
def ls(path: Annotated[str, typer.Argument()] = "/") -> None:
    """List a directory."""
    entries = _client().ls(path)
    if STATE["json"]:
        return _emit(entries)
    table = Table(box=None, show_header=True)
    for col in ("type", "size", "modified (UTC)", "name"):
        table.add_column(col, justify="right" if col == "size" else "left")
    for e in entries:
        name = e["name"] + ("/" if e["type"] == "dir" else "")
        table.add_row(e["type"], "" if e["type"] == "dir" else str(e["size"]), _when(e["mtime"]), name)
    out.print(table)


@app.command()
def stat(path: str) -> None:
    """Show a file's or directory's metadata."""
    entry = _client().stat(path)
    _emit(entry, "\n".join(f"{k}: {v}" for k, v in entry.items()))


def _bar() -> RichProgress:
    return RichProgress(enabled=not STATE["json"] and sys.stderr.isatty() or STATE["progress"])


def _files_bar() -> FilesBar:
    return FilesBar(enabled=not STATE["json"] and sys.stderr.isatty() or STATE["progress"])


@app.command()
def put(
    local: Path,
    remote: str,
    parents: Annotated[
        bool, typer.Option("-p", "--parents", help="Create missing parent directories.")
    ] = False,
    recursive: Annotated[bool, typer.Option("-r", "--recursive", help="Upload a directory tree.")] = False,
    base: Annotated[
        Path | None, typer.Option(help="Local copy of the version the cloud has: upload a delta.")
    ] = None,
    delta_kind: Annotated[str, typer.Option(help="'version' (zstd patch-from) or 'rsync'.")] = "version",
    force_delta: Annotated[bool, typer.Option(help="Send the delta even when eq. 2 says not to.")] = False,
    via: Annotated[
        str, typer.Option(help="Large files: 'auto' (eq. 2 with measured rates), 'direct' or 'delta'.")
    ] = "auto",
    verbose: Annotated[
        bool, typer.Option("-v", "--verbose", help="Say which transfer mode was used.")
    ] = False,
) -> None:
    """Upload a file (or, with -r, a directory tree)."""
    if via not in ("auto", "direct", "delta"):
        raise HyCloudError("--via is 'auto', 'direct' or 'delta'", code="bad-usage", status=400)
    client, bar = _client(), _bar()
    try:
        if local.is_dir():
            if not recursive:
                raise HyCloudError(f"{local} is a directory (use -r)", code="is-a-directory", status=400)
            results = tree.put_tree(client, local, remote, progress=bar)
            _emit(results, f"uploaded {len(results)} files from {local} to {remote}")
            return
        if not local.is_file():
            raise HyCloudError(f"{local} is not a file", code="no-such-local-file", status=400)
        entry = client.put(
            local,
            remote,
            parents=parents,
            progress=bar,
            base=base,
            delta_kind=delta_kind,
            force_delta=force_delta,
            via=via,
        )
        settle()
    finally:
        bar.close()
    how = f"delta {entry['kind']}" if "kind" in entry else entry.get("storage", "small")
    mode = f", mode {entry['mode']}" if verbose or STATE.get("verbose") else ""
    _emit(entry, f"uploaded {local} -> {entry['path']} ({entry['size']} bytes, {how}{mode})")


@app.command()
def get(
    remote: str,
    local: Path,
    recursive: Annotated[bool, typer.Option("-r", "--recursive", help="Download a directory tree.")] = False,
    via: Annotated[
        str,
        typer.Option(
            help="Large files: 'auto' (eq. 2 with measured rates), 'direct' (S3), 'relay' (EFS) or 'delta'."
        ),
    ] = "auto",
    base: Annotated[
        Path | None, typer.Option(help="An older local version to download a delta against.")
    ] = None,
    verbose: Annotated[
        bool, typer.Option("-v", "--verbose", help="Say which transfer mode was used.")
    ] = False,
) -> None:
    """Download a file (or, with -r, a directory tree). `--via delta` patches the existing local file;
    `auto` does when eq. 2 says it pays."""
    if via not in ("auto", "direct", "relay", "delta"):
        raise HyCloudError("--via is 'auto', 'direct', 'relay' or 'delta'", code="bad-usage", status=400)
    client, bar = _client(), _bar()
    try:
        if recursive:
            results = tree.get_tree(client, remote, local, progress=bar)
            _emit(results, f"downloaded {len(results)} files from {remote} to {local}")
            return
        if local.is_dir():
            local = local / remote.rstrip("/").rsplit("/", 1)[-1]
        path = client.get(remote, local, progress=bar, via=via, base=base)
        wait_for_adaptation()
        settle()
    finally:
        bar.close()
    mode = client.last_transfer.get("mode", "")
    _emit(
        {"path": str(path), "size": path.stat().st_size, **client.last_transfer},
        f"downloaded {remote} -> {path}" + (f" (mode {mode})" if verbose or STATE.get("verbose") else ""),
    )


@app.command()
def rm(
    path: str,
    recursive: Annotated[
        bool, typer.Option("-r", "--recursive", help="Remove a directory and its contents.")
    ] = False,
) -> None:
    """Remove a file (or, with -r, a directory tree)."""
    client = _client()
    if recursive or client.stat(path)["type"] == "dir":
        with following(_files_bar()) as bar:
            result = client.rmdir(path, recursive=recursive, progress=bar)
        _emit(result, f"removed {path} ({result['files']} files)")
    else:
        _emit(client.rm(path), f"removed {path}")


@app.command()
def rmdir(
    path: str,
    recursive: Annotated[
        bool, typer.Option("-r", "--recursive", help="Remove the directory's contents too.")
    ] = False,
) -> None:
    """Remove an empty directory (with -r, a directory tree)."""
    with following(_files_bar()) as bar:
        result = _client().rmdir(path, recursive=recursive, progress=bar)
    _emit(result, f"removed {path}" + (f" ({result['files']} files)" if recursive else ""))


@app.command()
def mv(src: str, dst: str) -> None:
    """Move or rename a file or directory."""
    with following(_files_bar()) as bar:
        entry = _client().mv(src, dst, progress=bar)
    _emit(entry, f"moved {src} -> {entry['path']}")


@app.command()
def cp(
    src: str,
    dst: str,
    recursive: Annotated[
        bool, typer.Option("-r", "--recursive", help="Accepted; folders are always copied whole.")
    ] = False,
) -> None:
    """Copy a file or directory (large files are shared, not copied)."""
    with following(_files_bar()) as bar:
        entry = _client().cp(src, dst, progress=bar)
    _emit(entry, f"copied {src} -> {entry['path']}")


@app.command()
def usage() -> None:
    """Show what your files occupy in EFS and S3 and their monthly cost, beside all-S3 and all-EFS."""
    usage_command(STATE["json"])


INTERRUPTED = "interrupted; run the same command again to resume"


def _fail(message: str, code: int) -> None:
    """One line on stderr, whatever the message holds, then exit."""
    err.print(" ".join(message.split()), highlight=False, markup=False, soft_wrap=True)
    sys.exit(code)


def _fail_error(e: HyCloudError) -> None:
    _fail(f"error [{e.code}]: {e.message}", exit_codes.for_error(e.code, e.status))


def _usage_error(e: typer.TyperException) -> None:
    if hasattr(e, "show"):
        e.show()  # click's short usage, "Try 'hycloud -h' for help", and the error
        sys.exit(e.exit_code)
    _fail(f"error [bad-usage]: {e.format_message()}", e.exit_code)


def main(argv: list[str] | None = None) -> None:
    """Run the CLI: every failure ends as one line on stderr (or click's short usage) and an exit
    code from `exit_codes`. Typer's own runner is bypassed because it turns Ctrl-C into a silent
    exit status and lets usage errors escape as tracebacks when not in standalone mode."""
    command = typer.main.get_command(app)
    try:
        with command.make_context("hycloud", list(sys.argv[1:] if argv is None else argv)) as ctx:
            command.invoke(ctx)
    except typer.Exit as e:
        sys.exit(e.exit_code)
    except typer.Abort:
        _fail("aborted", exit_codes.ERROR)
    except KeyboardInterrupt:
        _fail(INTERRUPTED, exit_codes.INTERRUPTED)
    except typer.TyperException as e:  # click's usage errors (typer's own copy of click)
        _usage_error(e)
    except HyCloudError as e:
        _fail_error(e)
    except BrokenPipeError:  # stdout closed early (`hycloud ls | head`): not an error to report
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(exit_codes.ERROR)
    except requests.RequestException as e:
        _fail(f"error [unreachable]: {e}", exit_codes.UNREACHABLE)
    except OSError as e:
        _fail(f"error [local-io]: {e}", exit_codes.LOCAL_IO)


if __name__ == "__main__":
    main()
