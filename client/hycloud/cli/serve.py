"""`hycloud serve webdav`: your files over WebDAV for Finder, Explorer, davfs2 and litmus."""

from __future__ import annotations

import os
from typing import Annotated

import typer

serve = typer.Typer(help="Serve HyCloud files over another protocol.", no_args_is_help=True)


def endpoint_or_config(endpoint: str | None) -> str:
    from ..config import ClientConfig

    return endpoint or os.environ.get("HYCLOUD_ENDPOINT") or ClientConfig.load().endpoint


@serve.command("webdav")
def webdav(
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8080,
    host: Annotated[
        str, typer.Option(help="Address to listen on; keep 127.0.0.1 unless behind TLS.")
    ] = "127.0.0.1",
    endpoint: Annotated[str | None, typer.Option(help="API URL (default: the configured one).")] = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Log every request.")] = False,
) -> None:
    """Serve over WebDAV until Ctrl-C. Log in with your user name and your API key as the password.

    Example: `hycloud serve webdav --port 8080`, then `mount -t davfs http://127.0.0.1:8080/ /mnt/hc`.
    """
    from rich.console import Console

    from ..webdav import serve as run

    url = endpoint_or_config(endpoint)
    Console(stderr=True).print(
        f"WebDAV on http://{host}:{port}/ for {url}\n"
        "log in as your HyCloud user name with an API key as the password; Ctrl-C stops",
        highlight=False,
    )
    run(url, host, port, verbose=3 if verbose else 1)
