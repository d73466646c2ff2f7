"""Large-file download: parallel ranged reads, verified against the content hash, resumable.

Pieces land in `<file>.hycloud-part` beside the target; a resume file (`resume.py`) records each
piece as it is written and synced, so rerunning an interrupted download fetches only what is
missing (and starts over if the remote content changed). The target takes its name only after
the whole content hash verified, so an interrupted download never leaves a partial file there.
Two sources share this: presigned S3 GETs (direct) and the EFS relay cache through the API.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from hycloud_core import content
from hycloud_core.errors import ConflictError, HyCloudError

from ..http import Transport, new_session
from . import resume
from .config import DEFAULT, TransferConfig
from .endpoints import redirect
from .jobs import JobPoll, JobTimeout, follow_job
from .parallel import run_parallel
from .progress import Progress
from .renew import UrlBook, with_renewal
from .retry import Refused, with_retries

RELAY_WAIT_S = 900
RELAY_POLL_WAIT_S = 10
Fetch = Callable[[int, int], bytes]


def part_paths(local: Path) -> tuple[Path, Path]:
    """The partial file and its resume file, beside the target."""
    return local.with_name(local.name + ".hycloud-part"), local.with_name(local.name + ".hycloud-part.json")


def _write_at(path: Path, offset: int, data: bytes) -> None:
    """Write and sync one piece through its own handle, so it is on disk before it counts as done."""
    fd = os.open(path, os.O_WRONLY)
    try:
        os.pwrite(fd, data, offset)
        os.fdatasync(fd)
    finally:
        os.close(fd)


def _resumable(
    part: Path, state_file: Path, identity: dict, offsets: list[int], progress: Progress
) -> set[int]:
    """Pieces already on disk from an earlier run; otherwise a fresh, empty partial file."""
    done: set[int] = resume.load(state_file, identity, set(offsets), progress.note)
    if done and not (part.exists() and part.stat().st_size == identity["size"]):
        done = set()  # the partial file is gone or is another: nothing to resume
    if done:
        progress.note(f"resuming: {len(done)} of {len(offsets)} parts done")
        return done
    state_file.unlink(missing_ok=True)
    with open(part, "wb") as f:
        f.truncate(identity["size"])
    return done


def download_ranges(
    size: int,
    content_hash: str,
    local: str | Path,
    fetch: Fetch,
    piece: int,
    progress: Progress | None = None,
    workers: int = DEFAULT.workers,
) -> Path:
    local, progress = Path(local), progress or Progress()
    part, state_file = part_paths(local)
    identity = {"content_hash": content_hash, "size": size, "piece": piece}
    offsets = list(range(0, size, piece))
    done = _resumable(part, state_file, identity, offsets, progress)
    progress.start(f"download {local.name}", size)
    progress.advance(sum(min(piece, size - o) for o in done))

    def get(offset: int) -> int:
        length = min(piece, size - offset)
        data = fetch(offset, length)
        if len(data) != length:
            raise HyCloudError(
                f"short read at {offset}: {len(data)} of {length} bytes", code="download-failed"
            )
        _write_at(part, offset, data)
        progress.advance(length)
        return offset

    for offset in run_parallel(get, [o for o in offsets if o not in done], workers):
        done.add(offset)
        resume.save(state_file, identity, done)
    if content.hash_file(part)[0] != content_hash:
        part.unlink()
        state_file.unlink(missing_ok=True)
        raise HyCloudError(
            f"download of {local.name} is corrupt (content hash mismatch)", code="corrupt-download"
        )
    part.replace(local)
    state_file.unlink(missing_ok=True)
    return local


def retrying(fetch: Fetch, config: TransferConfig) -> Fetch:
    """`fetch` tried again while its failure may pass (retry.py), with backoff."""
    return lambda offset, length: with_retries(lambda: fetch(offset, length), config)


def download_large(
    info: dict,
    local: str | Path,
    progress: Progress | None = None,
    renew: Callable[[], str] | None = None,
    config: TransferConfig = DEFAULT,
) -> Path:
    """Direct download: ranged GETs of a presigned S3 URL; `renew` gives a fresh URL of the same
    version when S3 says the one in use expired (the pieces already on disk are kept)."""
    session = new_session()
    book = UrlBook({"": info["url"]}, (lambda _keys: {"": renew()}) if renew else None)

    def fetch(offset: int, length: int) -> bytes:
        headers = {"Range": f"bytes={offset}-{offset + length - 1}"}
        r = with_renewal(book, "", lambda url: session.get(url, headers=headers, timeout=config.part_timeout))
        if r is None or r.status_code not in (200, 206):
            raise Refused(None if r is None else r.status_code)
        return r.content

    return download_ranges(
        info["size"],
        info["content_hash"],
        local,
        retrying(fetch, config),
        config.part_size,
        progress,
        config.workers,
    )


def relay_ready(
    http: Transport, path: str, progress: Progress | None = None, report: dict | None = None
) -> dict:
    """Have the cloud copy the file into its EFS relay cache; wait until it is there.

    When the job had to wait in the cloud's FOP queue, `report` gets its place when asked
    (`queue`: position, estimated seconds until it starts, workers).
    """
    progress, report = progress or Progress(), report if report is not None else {}
    status = http.json("POST", "/v1/relay", json={"path": path})
    progress.start(f"relay {path.rsplit('/', 1)[-1]} S3→EFS", status["size"])

    def queued(status: dict) -> None:
        if status["state"] == "running" and "queue" in status and "queue" not in report:
            report["queue"] = place = status["queue"]
            progress.note(
                f"relay {path}: queued at position {place['position']},"
                f" estimated start in {place['estimated_start_s']:.0f} s"
            )

    try:
        poll = JobPoll("/v1/relay", {"path": path}, RELAY_POLL_WAIT_S, timeout_s=RELAY_WAIT_S, pause_s=0.1)
        status = follow_job(http, poll, status, queued)
    except JobTimeout:
        raise HyCloudError(
            f"relay of {path} did not finish in {RELAY_WAIT_S}s", code="relay-timeout"
        ) from None
    if status["state"] != "ready":
        error = status.get("error") or {}
        reason = error.get("message", status["state"]) if isinstance(error, dict) else error
        raise HyCloudError(f"relay of {path} failed: {reason}", code="relay-failed")
    progress.advance(status["size"])
    return status


def download_relay(
    http: Transport,
    path: str,
    local: str | Path,
    progress: Progress | None = None,
    report: dict | None = None,
    endpoints: dict[str, str] | None = None,
    config: TransferConfig = DEFAULT,
) -> Path:
    """Relay download: S3 → EFS cache by a cloud job, then parallel ranged reads from the cache (or,
    for a coded file made whole at a data instance, from the presigned URL of its copy there,
    reached through `endpoints[instance]` when given, as coded blocks are)."""
    report = report if report is not None else {}
    status = relay_ready(http, path, progress, report)
    if status.get("url"):
        report["instance"] = status.get("instance")
        instance = status.get("instance")
        endpoint = (endpoints or {}).get(instance) if instance is not None else None

        def renew() -> str:  # the copy's URL again (its job run anew if the copy was evicted)
            again = relay_ready(http, path)
            if again["content_hash"] != status["content_hash"]:
                raise ConflictError(f"{path} changed while it was downloaded", code="changed-while-open")
            if not again.get("url"):  # made whole elsewhere since (the ring changed): start over
                raise HyCloudError(f"the copy of {path} moved; download it again", code="download-failed")
            return redirect(again["url"], endpoint)

        url = redirect(status["url"], endpoint)
        return download_large({**status, "url": url}, local, progress, renew, config)

    def fetch(offset: int, length: int) -> bytes:
        params = {"path": path, "offset": offset, "length": length}
        try:
            return http.request(
                "GET", "/v1/relay/data", params=params, headers={"Accept": "application/octet-stream"}
            ).content
        except ConflictError as err:  # evicted meanwhile: bring it back and go on
            if err.code != "relay-not-ready":
                raise
            relay_ready(http, path)
            return http.request(
                "GET", "/v1/relay/data", params=params, headers={"Accept": "application/octet-stream"}
            ).content

    return download_ranges(
        status["size"],
        status["content_hash"],
        local,
        retrying(fetch, config),
        config.relay_piece,
        progress,
        config.relay_workers,
    )
