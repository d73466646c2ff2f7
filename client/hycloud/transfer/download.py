"""Large-file download: parallel ranged reads, verified against the content hash, resumable.

Pieces land in `<file>.hycloud-part`; a sidecar JSON lists finished pieces and the content hash,
so rerunning an interrupted download fetches only what is missing (and starts over if the remote
content changed). The file takes its name only after the whole content hash verified.
Two sources share this: presigned S3 GETs (direct) and the EFS relay cache through the API.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path

import requests

from hycloud_core import content
from hycloud_core.errors import ConflictError, HyCloudError

from ..http import Http, new_session
from .parallel import run_parallel
from .progress import Progress

WORKERS = 8
RELAY_PIECE = 4 * 1024 * 1024
RELAY_WAIT_S = 900
Fetch = Callable[[int, int], bytes]


def download_ranges(
    size: int,
    content_hash: str,
    local: str | Path,
    fetch: Fetch,
    piece: int,
    progress: Progress | None = None,
    workers: int = WORKERS,
) -> Path:
    local, progress = Path(local), progress or Progress()
    part = local.with_name(local.name + ".hycloud-part")
    sidecar = local.with_name(local.name + ".hycloud-part.json")
    state = json.loads(sidecar.read_text()) if sidecar.exists() and part.exists() else {}
    if state.get("content_hash") != content_hash or state.get("piece") != piece:
        state = {"content_hash": content_hash, "piece": piece, "done": []}
        with open(part, "wb") as f:
            f.truncate(size)
    done = set(state["done"])
    offsets = [o for o in range(0, size, piece) if o not in done]
    progress.start(f"download {local.name}", size)
    progress.advance(sum(min(piece, size - o) for o in done))
    fd = os.open(part, os.O_WRONLY)

    def get(offset: int) -> int:
        length = min(piece, size - offset)
        data = fetch(offset, length)
        if len(data) != length:
            raise HyCloudError(
                f"short read at {offset}: {len(data)} of {length} bytes", code="download-failed"
            )
        os.pwrite(fd, data, offset)
        progress.advance(length)
        return offset

    try:
        for offset in run_parallel(get, offsets, workers):
            state["done"].append(offset)
            sidecar.write_text(json.dumps(state))
        os.fsync(fd)
    finally:
        os.close(fd)
    if content.hash_file(part)[0] != content_hash:
        part.unlink()
        sidecar.unlink()
        raise HyCloudError(
            f"download of {local.name} is corrupt (content hash mismatch)", code="corrupt-download"
        )
    part.replace(local)
    sidecar.unlink(missing_ok=True)
    return local


def _retrying(fetch: Fetch) -> Fetch:
    def wrapped(offset: int, length: int) -> bytes:
        for attempt in range(4):
            try:
                return fetch(offset, length)
            except (requests.RequestException, HyCloudError):
                if attempt == 3:
                    raise
                time.sleep(0.2 * 2**attempt)
        raise AssertionError("unreachable")

    return wrapped


def download_large(info: dict, local: str | Path, progress: Progress | None = None) -> Path:
    """Direct download: ranged GETs of a presigned S3 URL."""
    session = new_session()

    def fetch(offset: int, length: int) -> bytes:
        r = session.get(info["url"], headers={"Range": f"bytes={offset}-{offset + length - 1}"}, timeout=300)
        if r.status_code not in (200, 206):
            raise HyCloudError(f"S3 answered {r.status_code}", code="download-failed")
        return r.content

    return download_ranges(
        info["size"], info["content_hash"], local, _retrying(fetch), content.PART_SIZE, progress
    )


def relay_ready(http: Http, path: str, progress: Progress | None = None) -> dict:
    """Have the cloud copy the file into its EFS relay cache; wait until it is there."""
    progress = progress or Progress()
    status = http.json("POST", "/v1/relay", json={"path": path})
    progress.start(f"relay {path.rsplit('/', 1)[-1]} S3→EFS", status["size"])
    deadline, delay = time.monotonic() + RELAY_WAIT_S, 0.1
    while status["state"] == "running":
        if time.monotonic() > deadline:
            raise HyCloudError(f"relay of {path} did not finish in {RELAY_WAIT_S}s", code="relay-timeout")
        time.sleep(delay)
        delay = min(delay * 1.5, 2.0)
        status = http.json("GET", "/v1/relay", params={"path": path, "wait": 10})
    if status["state"] != "ready":
        raise HyCloudError(
            f"relay of {path} failed: {status.get('error', status['state'])}", code="relay-failed"
        )
    progress.advance(status["size"])
    return status


def download_relay(http: Http, path: str, local: str | Path, progress: Progress | None = None) -> Path:
    """Relay download: S3 → EFS cache by a cloud job, then parallel ranged reads from the cache."""
    status = relay_ready(http, path, progress)

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
        status["size"], status["content_hash"], local, _retrying(fetch), RELAY_PIECE, progress, workers=4
    )
