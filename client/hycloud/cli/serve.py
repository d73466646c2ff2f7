"""`hycloud serve webdav`: your files over WebDAV for Finder, Explorer, davfs2 and litmus."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from .mount import DEFAULT_CACHE, cache_size_option, check_cache_dir, metadata_timeout_option

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
    cache_dir: Annotated[
        Path | None,
        typer.Option(
            envvar="HYCLOUD_DAV_CACHE_DIR",
            file_okay=False,
            help="Folder for the write-back cache (made if missing). Default: a new temporary folder.",
        ),
    ] = None,
    cache_size: Annotated[
        int, cache_size_option("Bound of the write-back cache, e.g. 512M or 4G (at least 16M).")
    ] = DEFAULT_CACHE,  # type: ignore[assignment]  # parsed by parse_size
    metadata_timeout: Annotated[
        float, metadata_timeout_option("How long entries and folder listings are trusted (0 to 3600).")
    ] = 2.0,
) -> None:
    """Serve over WebDAV until Ctrl-C or SIGTERM. Log in with your user name and your API key as
    the password.

    \b
    It serves from the caches `hycloud mount` uses. A PUT of a small file is answered once the
    bytes are in the local write-back cache (--cache-dir, bounded by --cache-size); about 0.3 s
    later the files put meanwhile are sent together, many to a request. A larger file is
    answered once it is in the cloud. Ctrl-C and SIGTERM send everything before the gateway
    ends. Other clients see a small file once it is sent; the gateway sees their changes within
    --metadata-timeout. A PROPFIND with Depth: infinity is refused (403, propfind-finite-depth).

    Example: `hycloud serve webdav --port 8080`, then `mount -t davfs http://127.0.0.1:8080/ /mnt/hc`.
    """
    from rich.console import Console

    from ..webdav import serve as run
    from ..webdav.workspaces import Workspaces

    folder = check_cache_dir(cache_dir, None)
    url = endpoint_or_config(endpoint)
    Console(stderr=True).print(
        f"WebDAV on http://{host}:{port}/ for {url}\n"
        "log in as your HyCloud user name with an API key as the password; Ctrl-C stops",
        highlight=False,
    )
    lost = run(
        url,
        host,
        port,
        verbose=3 if verbose else 1,
        workspaces=Workspaces(folder, cache_size, metadata_timeout),
    )
    if lost:
        raise typer.Exit(1)
