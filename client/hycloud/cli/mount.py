"""`hycloud mount DIR`: your files as a local folder (FUSE), until unmounted or Ctrl-C.

The options are checked here, before any client or FUSE is loaded, so a bad size or folder is a
usage error (exit 2) that names the option, not a failure once the mount has started.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Annotated

import typer

UNITS = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3, "T": 1024**4}
MIN_CACHE = 16 * 1024**2  # below this a tree's files would wait on each other at every close
DEFAULT_CACHE = "2G"
MAX_METADATA_TIMEOUT_S = 3600.0


def parse_size(text: str) -> int:
    """'2G' -> 2 GiB; also 512M, 1.5G, 800MiB, or plain bytes. At least 16 MiB."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([KMGT]?)(?:i?B)?\s*", text, re.IGNORECASE)
    if not match:
        raise typer.BadParameter(f"{text!r} is not a size such as 512M, 2G or 1.5G")
    size = int(float(match.group(1)) * UNITS[match.group(2).upper()])
    if size < MIN_CACHE:
        raise typer.BadParameter(f"{text!r} is below the minimum of 16M")
    return size


def check_timeout(seconds: float | None) -> float | None:
    if seconds is not None and not 0 <= seconds <= MAX_METADATA_TIMEOUT_S:
        raise typer.BadParameter(f"{seconds:g} s is outside 0 to {MAX_METADATA_TIMEOUT_S:g} s")
    return seconds


def cache_size_option(help: str, envvar: str | None = None) -> typer.models.OptionInfo:
    """`--cache-size` of a command serving from the write-back cache: a size such as 512M or 2G."""
    return typer.Option(envvar=envvar, parser=parse_size, metavar="SIZE", help=help)


def metadata_timeout_option(help: str) -> typer.models.OptionInfo:
    """`--metadata-timeout` of a command serving from the metadata cache: seconds, 0 to 3600."""
    return typer.Option(callback=check_timeout, metavar="SECONDS", help=help)


def check_cache_dir(cache_dir: Path | None, mountpoint: Path | None) -> str | None:
    """The cache folder, made if missing; never inside the mount point (its files would be written
    through the mount they cache)."""
    if cache_dir is None:
        return None
    folder = cache_dir.expanduser().resolve()
    inside = mountpoint.expanduser().resolve() if mountpoint is not None else None
    if inside is not None and (folder == inside or inside in folder.parents):
        raise typer.BadParameter(
            f"{cache_dir} is inside the mount point {mountpoint}", param_hint="--cache-dir"
        )
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise typer.BadParameter(f"{cache_dir}: {err.strerror}", param_hint="--cache-dir") from err
    if not os.access(folder, os.W_OK | os.X_OK):
        raise typer.BadParameter(f"{cache_dir} is not writable", param_hint="--cache-dir")
    return str(folder)


def mount_command(
    directory: Annotated[Path, typer.Argument(help="Empty local folder to mount on.")],
    read_ahead_mib: Annotated[int, typer.Option("--read-ahead", min=1, help="Read-ahead window in MiB.")] = 8,
    cache_dir: Annotated[
        Path | None,
        typer.Option(
            envvar="HYCLOUD_MOUNT_CACHE_DIR",
            file_okay=False,
            help="Folder for the write-back cache (made if missing; not inside DIR). Default: a new "
            "temporary folder. Each mount takes a subfolder, removed once everything in it is sent.",
        ),
    ] = None,
    cache_size: Annotated[
        int,
        cache_size_option(
            "Bound of the write-back cache, e.g. 512M or 4G (at least 16M). Past it, sent files are "
            "dropped, least recently used first; if that is not enough, close() waits for the uploads.",
            envvar="HYCLOUD_MOUNT_CACHE_SIZE",
        ),
    ] = DEFAULT_CACHE,  # type: ignore[assignment]  # parsed by parse_size
    metadata_timeout: Annotated[
        float | None,
        metadata_timeout_option(
            "How long entries and folder listings are fresh (0 to 3600; default 2, with --native "
            "30); older ones answer up to 15 times this while refreshed in the background "
            "(--native: a folder used past it is listed again in the background). Lower: other "
            "clients' changes seen sooner; higher: fewer requests for big trees."
        ),
    ] = None,
    native: Annotated[
        bool,
        typer.Option(
            "--native",
            help="Serve from a local copy through the compiled daemon (hycloud-fused): local-disk "
            "speed for a working copy (git, builds); folders listed again after 30 s of use; "
            "encrypted folders are refused. See 'Native mount' below.",
        ),
    ] = False,
    io_uring: Annotated[
        bool,
        typer.Option(
            "--io-uring/--no-io-uring",
            help="With --native: take the kernel's requests over io_uring where it offers them "
            "(Linux 6.14+ with /sys/module/fuse/parameters/enable_uring set to Y by root), each "
            "answered on its caller's CPU; else through /dev/fuse.",
        ),
    ] = True,
) -> None:
    """Mount your HyCloud files on DIR until `fusermount3 -u DIR`, SIGTERM or Ctrl-C.

    \b
    Writes: a write-back cache. close() returns once the bytes are in the local cache
    (--cache-dir, bounded by --cache-size); about 0.3 s later a background flusher sends
    closed files, small ones many to a request. A file is durable in the cloud when
    fsync() on it returns (it waits for the upload and reports its error, e.g. EDQUOT),
    and everything is when the unmount ends: the process sends what it holds first.
    close() alone does not make a file durable; a mount killed with SIGKILL loses what
    it had not sent yet.

    \b
    Consistency: within this mount, reads and stats see every write at once (stronger
    than close-to-open). Across clients: others see a file once it is sent and their
    own caches expire; this mount sees their changes once it lists their folder again:
    usually --metadata-timeout plus one listing, at most 15 times it plus one listing
    (a listing past the timeout answers while a background refresh runs), plus up to
    twice --metadata-timeout kept by the kernel (names, absent names and attributes),
    except for files it still holds unsent changes to. Its own changes update its
    cached listings and the kernel's: no listing again. No locks: when two clients
    write one file, the last upload wins.

    \b
    Reads fetch --read-ahead MiB at a time. Modes and owners set locally are not kept;
    mtimes are.

    \b
    Native mount (--native): a compiled daemon answers from a local copy under --cache-dir
    (bounded by --cache-size: past it, files sent or fetched longest ago become stubs again,
    fetched at their next read); files are fetched at their first read,
    folders listed at their first lookup. Writes are sent in order, in bundles, about 0.4 s
    after a file's last write; fsync() sends its file (after the moves and removals before
    it) and waits for it, the unmount waits for everything. A folder used more
    than 30 s (--metadata-timeout) after its last listing is listed again in the background and other clients'
    changes merged in, except into files changed here and not sent yet (last writer wins).
    Where the kernel offers FUSE over io_uring (Linux 6.14+, enable_uring on), requests are
    answered on their caller's CPU, about twice as fast per request.

    \b
    Examples:
      hycloud mount ~/hycloud &              # then: fusermount3 -u ~/hycloud
      hycloud mount --cache-dir ~/.cache/hycloud --cache-size 8G ~/hycloud &
      hycloud mount --metadata-timeout 0.5 ~/shared &   # see other clients sooner
    """
    if not directory.is_dir():
        raise typer.BadParameter(f"{directory} is not a folder", param_hint="DIR")
    folder = check_cache_dir(cache_dir, directory)

    from ..sdk.client import HyCloud

    if native:
        from ..mount.native import KERNEL_TTL_S, mount_native, mounted_note
        from .output import note

        ttl = KERNEL_TTL_S if metadata_timeout is None else metadata_timeout
        return mount_native(
            HyCloud.from_config(),
            str(directory),
            folder,
            cache_size=cache_size,
            ttl=ttl,
            io_uring=io_uring,
            on_mounted=lambda transport: note(mounted_note(str(directory), transport, io_uring)),
        )
    from ..mount import mount

    mount(
        HyCloud.from_config(),
        str(directory),
        read_ahead=read_ahead_mib * 1024 * 1024,
        cache_dir=folder,
        cache_size=cache_size,
        metadata_ttl=2.0 if metadata_timeout is None else metadata_timeout,
    )
