"""`hycloud admin`: users, keys and deployment usage, straight against the table (AWS credentials)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from hycloud_core.errors import HyCloudError

from .output import stdout_console

if TYPE_CHECKING:
    from rich.console import Console

admin = typer.Typer(help="Administration (needs AWS credentials for the deployment).", no_args_is_help=True)
STATE = {"json": False}

TableOpt = Annotated[str | None, typer.Option("--table", help="DynamoDB table name.")]
OutputsOpt = Annotated[Path | None, typer.Option("--outputs", help="`cdk deploy --outputs-file` JSON.")]
ReadOnlyOpt = Annotated[bool, typer.Option("--read-only", help="The key may read but never change files.")]


@admin.callback()
def _group(ctx: typer.Context) -> None:
    STATE["json"] = bool(ctx.find_root().params.get("json_output"))


def ops():
    """The admin operations, imported when a command runs (they load boto3: 0.2 s a start)."""
    from .. import admin

    return admin


@cache
def out() -> Console:
    """The console admin commands print to, made when one first prints (Rich loads only then)."""
    return stdout_console()


def _json() -> bool:
    """The root command's --json flag."""
    return STATE["json"]


def _emit(data: object, human: str) -> None:
    if _json():
        out().print_json(json.dumps(data))
    else:
        out().print(human, highlight=False)


def _table(table: str | None, outputs: Path | None) -> str:
    if outputs:
        ops().use_outputs_region(outputs)
    if not table and outputs:
        table = next(o["TableName"] for o in json.loads(outputs.read_text()).values() if "TableName" in o)
    if not table:
        raise HyCloudError("give --table or --outputs", code="bad-usage", status=400)
    return table


def _when(ts: float | None) -> str:
    return "-" if ts is None else datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d %H:%M:%S")


@admin.command("usage")
def admin_usage(table: TableOpt = None, outputs: OutputsOpt = None) -> None:
    """Usage and cost of the whole deployment and of each user (scans the table once)."""
    from .usage import admin_usage_command

    admin_usage_command(_table(table, outputs), _json())


@admin.command("create-user")
def create_user(
    user: str, table: TableOpt = None, outputs: OutputsOpt = None, read_only: ReadOnlyOpt = False
) -> None:
    """Create a user and print its API key (shown once; only its hash is stored)."""
    created = ops().create_account(_table(table, outputs), user, read_only=read_only)
    _emit(created, created["api_key"])


@admin.command("add-key")
def add_key(
    user: str, table: TableOpt = None, outputs: OutputsOpt = None, read_only: ReadOnlyOpt = False
) -> None:
    """Give a user one more API key (printed once)."""
    token = ops().add_key(_table(table, outputs), user, read_only=read_only)
    _emit({"user": user, "api_key": token, "read_only": read_only}, token)


@admin.command("list-keys")
def list_keys(user: str, table: TableOpt = None, outputs: OutputsOpt = None) -> None:
    """A user's keys: ids, creation, read-only, expiry (never the secrets)."""
    keys = ops().users(_table(table, outputs)).keys(user)
    if _json():
        _emit({"user": user, "keys": keys}, "")
        return
    from rich.table import Table

    listing = Table(box=None)
    for col in ("key id", "created", "read-only", "expires"):
        listing.add_column(col)
    for k in keys:
        listing.add_row(
            k["key_id"], _when(k["created"]), "yes" if k["read_only"] else "no", _when(k["expires"])
        )
    out().print(listing)


@admin.command("revoke-key")
def revoke_key(key_id: str, table: TableOpt = None, outputs: OutputsOpt = None) -> None:
    """Revoke one key at once (its id is the part after `hck_`, as `list-keys` shows)."""
    user = ops().users(_table(table, outputs)).revoke(key_id)
    _emit({"key_id": key_id, "user": user, "revoked": True}, f"revoked key {key_id} of {user}")


@admin.command("rotate-key")
def rotate_key(
    user: str,
    table: TableOpt = None,
    outputs: OutputsOpt = None,
    grace: Annotated[int, typer.Option("--grace", help="Seconds the old keys keep working.")] = 0,
    read_only: ReadOnlyOpt = False,
) -> None:
    """Give a user a new key (printed once) and retire its other keys, now or after --grace seconds."""
    rotated = ops().rotate_key(_table(table, outputs), user, grace_s=grace, read_only=read_only)
    _emit(rotated, rotated["api_key"])


@admin.command("disable-user")
def disable_user(user: str, table: TableOpt = None, outputs: OutputsOpt = None) -> None:
    """Refuse every key of a user (403 user-disabled) until `enable-user`."""
    ops().users(_table(table, outputs)).set_disabled(user, True)
    _emit({"user": user, "disabled": True}, f"disabled {user}")


@admin.command("enable-user")
def enable_user(user: str, table: TableOpt = None, outputs: OutputsOpt = None) -> None:
    """Accept a disabled user's keys again."""
    ops().users(_table(table, outputs)).set_disabled(user, False)
    _emit({"user": user, "disabled": False}, f"enabled {user}")


@admin.command("delete-user")
def delete_user(user: str, table: TableOpt = None, outputs: OutputsOpt = None) -> None:
    """Delete a user with no files left: profile and keys go; its id is never given again."""
    uid = ops().users(_table(table, outputs)).delete(user)
    _emit({"user": user, "id": uid, "deleted": True}, f"deleted {user} ({uid})")


@admin.command("set-quota")
def set_quota(
    user: str,
    table: TableOpt = None,
    outputs: OutputsOpt = None,
    max_bytes: Annotated[int | None, typer.Option("--bytes", help="Bytes allowed; -1: unlimited.")] = None,
    max_files: Annotated[int | None, typer.Option("--files", help="Files allowed; -1: unlimited.")] = None,
    reset: Annotated[bool, typer.Option("--reset", help="Back to the deployment's defaults first.")] = False,
) -> None:
    """Set a user's own quota; limits not given stay as they are."""
    from .usage import quota_line

    result = ops().set_quota(_table(table, outputs), user, max_bytes, max_files, reset=reset)
    _emit(result, f"{user}: {quota_line(result)}")


@admin.command("set-trash-retention")
def set_trash_retention(
    user: str,
    table: TableOpt = None,
    outputs: OutputsOpt = None,
    days: Annotated[float | None, typer.Option("--days", help="Keep trash items this many days.")] = None,
    reset: Annotated[bool, typer.Option("--reset", help="Back to the deployment's retention.")] = False,
) -> None:
    """Set how long a user's trash keeps what `rm` removed before upkeep purges it (0: at the next upkeep)."""
    if reset == (days is not None):
        raise typer.BadParameter("give --days N or --reset")
    seconds = None if days is None else int(days * 86400)
    result = ops().set_trash_retention(_table(table, outputs), user, seconds)
    _emit(result, f"{user}: trash kept " + ("as the deployment says" if seconds is None else f"{seconds} s"))


@admin.command("set-limits")
def set_limits(
    user: str,
    table: TableOpt = None,
    outputs: OutputsOpt = None,
    rate: Annotated[float | None, typer.Option("--rate", help="Requests a second; 0: unlimited.")] = None,
    burst: Annotated[int | None, typer.Option("--burst", help="Requests at once above the rate.")] = None,
    jobs: Annotated[int | None, typer.Option("--jobs", help="Jobs queued or running; 0: unlimited.")] = None,
    reset: Annotated[bool, typer.Option("--reset", help="Back to the deployment's limits first.")] = False,
) -> None:
    """Set a user's own fair-use limits (429 past them); limits not given stay as they are."""
    users = ops().users(_table(table, outputs))
    if reset:
        users.set_limits(user, rate_per_s=None, burst=None, max_jobs=None)
    given = {"rate_per_s": rate, "burst": burst, "max_jobs": jobs}
    result = users.set_limits(user, **{k: v for k, v in given.items() if v is not None})
    shown = ", ".join(f"{k} {v}" for k, v in sorted(result.items())) or "the deployment's limits"
    _emit({"user": user, **result}, f"{user}: {shown}")


@admin.command("recount-usage")
def recount_usage(user: str, table: TableOpt = None, outputs: OutputsOpt = None) -> None:
    """Rebuild a user's usage counter from its file records (after a crash left it off)."""
    result = ops().recount_usage(_table(table, outputs), user)
    _emit(result, f"{user}: {result['bytes']} bytes in {result['files']} files")
