"""`hycloud configure`: save a profile's endpoint and key, only once they are known to work.

The key is never needed on the command line (where shell history and `ps` would keep it): it is
prompted for without echo, or read from stdin with `--key-stdin`.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from hycloud_core.errors import HyCloudError

from .output import emit, note

EXAMPLES = """Examples:

  hycloud configure --outputs .localcloud/outputs.json          # prompts for the key

  echo "$KEY" | hycloud configure --endpoint https://api.example/prod/ --key-stdin

  hycloud --profile work configure --endpoint https://api.example/prod/
"""


def configure(
    endpoint: Annotated[str | None, typer.Option(help="API URL.")] = None,
    outputs: Annotated[
        Path | None, typer.Option(help="`cdk deploy --outputs-file` JSON to take the URL from.")
    ] = None,
    key_stdin: Annotated[
        bool, typer.Option("--key-stdin", help="Read the API key from stdin (for scripts).")
    ] = False,
    profile: Annotated[
        str | None, typer.Option("--profile", help="Profile to save (default: the global --profile).")
    ] = None,
    key: Annotated[
        str | None, typer.Option(hidden=True, help="Deprecated: visible in shell history.")
    ] = None,
    standby: Annotated[
        str | None,
        typer.Option(help="The standby controller's API URL, to fail over to (docs/FAILOVER.md)."),
    ] = None,
) -> None:
    """Save the endpoint and API key of a profile, after checking them with `whoami`."""
    from ..config import ClientConfig, endpoint_from_outputs, profile_name

    url = endpoint or (endpoint_from_outputs(outputs) if outputs else None)
    if not url:
        raise HyCloudError("give --endpoint or --outputs", code="bad-usage", status=400)
    if key is not None:
        note("warning: --key leaves the key in shell history; use the prompt or --key-stdin")
    secret = (key or _read_key(key_stdin)).strip()
    if not secret:
        raise HyCloudError("no API key given", code="bad-usage", status=400)
    user = check(url, secret)
    name = profile_name(profile)
    path = ClientConfig(endpoint=url, api_key=secret, standby=standby).save(name)
    emit(
        {"config": str(path), "profile": name, "endpoint": url, "user": user, "standby": standby},
        f"saved profile '{name}' ({user}) in {path}",
    )


def _read_key(from_stdin: bool) -> str:
    if from_stdin:
        return sys.stdin.readline()
    return typer.prompt("API key", hide_input=True, err=True)


def check(url: str, key: str) -> str:
    """The user the key belongs to; an endpoint or key that does not work is refused."""
    import requests

    from ..sdk.client import HyCloud

    try:
        return HyCloud(url, key, timeout=15).whoami()
    except HyCloudError as e:
        if e.status in (401, 403):
            raise HyCloudError(
                f"the key was refused by {url} ({e.message}); nothing saved", code=e.code, status=e.status
            ) from None
        if e.code == "unreachable":
            raise HyCloudError(f"cannot reach {url}; nothing saved", code="unreachable", status=503) from None
        raise HyCloudError(
            f"{url} is not a HyCloud API ({e.message}); nothing saved", code="not-an-api", status=400
        ) from None
    except (ValueError, KeyError, TypeError, requests.RequestException):
        raise HyCloudError(
            f"{url} is not a HyCloud API; nothing saved", code="not-an-api", status=400
        ) from None
