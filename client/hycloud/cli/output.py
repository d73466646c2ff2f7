"""What the CLI writes: plain lines on stdout (never wrapped or cut, whatever the terminal),
JSON with `--json`, one error shape, human sizes and ISO 8601 times."""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # both load only when used: with -v, or for a table
    import requests
    from rich.console import Console

STATE: dict = {"json": False, "progress": False, "verbose": False, "quiet": False}


def bars_on() -> bool:
    """Progress bars on stderr: with --progress, or when it is a terminal (never with --quiet)."""
    return not STATE["quiet"] and (STATE["progress"] or (not STATE["json"] and sys.stderr.isatty()))


UNITS = "KMGTPE"


def echo(text: str) -> None:
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def note(text: str) -> None:
    """A line for the user on stderr (left out with --quiet)."""
    if not STATE["quiet"]:
        sys.stderr.write(text + "\n")
        sys.stderr.flush()


def emit(data: object, human: str | None = None) -> None:
    """The command's result: JSON with --json, else the human line (left out with --quiet)."""
    if STATE["json"]:
        echo(json.dumps(data, indent=2))
    elif human is not None and not STATE["quiet"]:
        echo(human)


def error_json(code: str, message: str) -> str:
    """The one shape every error takes on stdout with --json."""
    return json.dumps({"error": {"code": code, "message": message}})


def human_size(n: int) -> str:
    """Like `ls -h`: powers of 1024, one decimal below 10 (`1.5K`, `12M`)."""
    if n < 1024:
        return str(n)
    value = float(n)
    for unit in UNITS:
        value /= 1024
        if value < 1024 or unit == UNITS[-1]:
            return f"{value:.1f}{unit}" if value < 10 else f"{value:.0f}{unit}"
    raise AssertionError("unreachable")


def size_text(n: int, human: bool) -> str:
    return human_size(n) if human else str(n)


def iso_time(ts: float) -> str:
    """ISO 8601 in UTC to the second: `2026-11-23T23:20:00Z`."""
    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def columns(rows: list[list[str]], right: frozenset[int] = frozenset()) -> list[str]:
    """Rows as aligned lines; the last column (a name) is never padded or cut."""
    if not rows:
        return []
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    return [
        "  ".join(
            [
                (c.rjust(w) if i in right else c.ljust(w))
                for i, (c, w) in enumerate(zip(row, widths, strict=False))
            ]
            + [row[-1]]
        )
        for row in rows
    ]


def entry_name(entry: dict) -> str:
    return entry["name"] + ("/" if entry["type"] == "dir" else "")


def long_listing(entries: list[dict], human: bool) -> list[str]:
    """`ls -l`: type, size, modification time (ISO 8601, UTC), name."""
    rows = [
        [
            e["type"],
            "-" if e["type"] == "dir" else size_text(e["size"], human),
            iso_time(e["mtime"]),
            entry_name(e),
        ]
        for e in entries
    ]
    return columns(rows, right=frozenset({1}))


def stat_lines(entry: dict, human: bool) -> list[str]:
    shown = {**entry, "mtime": iso_time(entry["mtime"])}
    if entry.get("type") == "file":
        shown["size"] = size_text(entry["size"], human)
    if entry.get("mode") is not None:
        shown["mode"] = f"{entry['mode']:04o}"
    return [f"{k}: {v}" for k, v in shown.items()]


def log_requests(session: requests.Session) -> None:
    """With -v: each API and S3 request on stderr, with its status and time."""

    def show(response: requests.Response, *args, **kwargs) -> None:
        took = response.elapsed.total_seconds() * 1000
        url = (response.request.url or "").split("?X-Amz", 1)[0].split("&X-Amz", 1)[0]
        sys.stderr.write(f"{response.request.method} {url} -> {response.status_code} ({took:.0f} ms)\n")

    session.hooks["response"].append(show)


def stdout_console() -> Console:
    """A Rich console for stdout (tables) that never wraps or cuts a line going to a pipe or file."""
    from rich.console import Console

    if sys.stdout.isatty():
        return Console()
    return Console(width=1_000_000, soft_wrap=True, no_color=True, highlight=False)
