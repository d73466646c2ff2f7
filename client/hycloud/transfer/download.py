"""Large-file download: parallel ranged GETs of a presigned URL, verified against the content hash.

Parts land in `<file>.hycloud-part`; a sidecar JSON lists finished parts and the content hash,
so rerunning an interrupted download fetches only what is missing (and starts over if the
remote content changed). The file appears under its name only once every part verified.
"""

from __future__ import annotations

import hashlib
import json
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import requests
from hycloud_core import content
from hycloud_core.errors import HyCloudError

from .progress import Progress

WORKERS = 8


def _fetch(session: requests.Session, url: str, offset: int, length: int) -> bytes:
    for attempt in range(4):
        try:
            r = session.get(url, headers={"Range": f"bytes={offset}-{offset + length - 1}"}, timeout=300)
            if r.status_code in (200, 206) and len(r.content) == length:
                return r.content
        except requests.RequestException:
            pass
        if attempt == 3:
            raise HyCloudError(f"could not fetch bytes {offset}+{length}", code="download-failed")
    raise AssertionError("unreachable")


def download_large(info: dict, local: str | Path, progress: Progress | None = None) -> Path:
    local, progress = Path(local), progress or Progress()
    size, expected = info["size"], info["content_hash"]
    part = local.with_name(local.name + ".hycloud-part")
    sidecar = local.with_name(local.name + ".hycloud-part.json")
    state = json.loads(sidecar.read_text()) if sidecar.exists() and part.exists() else {}
    if state.get("content_hash") != expected:
        state = {"content_hash": expected, "digests": {}}
        with open(part, "wb") as f:
            f.truncate(size)
    digests: dict[str, str] = state["digests"]
    count = content.part_count(size)
    progress.start(f"download {local.name}", size)
    progress.advance(sum(content.part_range(size, int(n))[1] for n in digests))
    session = requests.Session()
    fd = os.open(part, os.O_WRONLY)

    def get(n: int) -> tuple[int, str]:
        offset, length = content.part_range(size, n)
        data = _fetch(session, info["url"], offset, length) if length else b""
        os.pwrite(fd, data, offset)
        progress.advance(length)
        return n, hashlib.sha256(data).hexdigest()

    try:
        with ThreadPoolExecutor(WORKERS) as pool:
            for n, digest in pool.map(get, [n for n in range(1, count + 1) if str(n) not in digests]):
                digests[str(n)] = digest
                sidecar.write_text(json.dumps(state))
        os.fsync(fd)
    finally:
        os.close(fd)
    got = content.hash_from_parts(bytes.fromhex(digests[str(n)]) for n in range(1, count + 1))
    if got != expected:
        part.unlink()
        sidecar.unlink()
        raise HyCloudError(
            f"download of {local.name} is corrupt (content hash mismatch)", code="corrupt-download"
        )
    part.replace(local)
    sidecar.unlink()
    return local
