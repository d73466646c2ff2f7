"""Large-file upload: hash, start or resume, PUT the missing parts in parallel, commit.

Rerunning an interrupted upload of the same file resumes it: the controller keys pending
uploads by content hash and reports which parts S3 already holds, so nothing is kept locally.
A part whose presigned URL expired before its turn (a long upload) gets a fresh one, with the other
parts still to send, and the parts sent are not sent again (renew.py).
"""

from __future__ import annotations

import os
from pathlib import Path

import requests

from hycloud_core import content
from hycloud_core.errors import ConflictError, HyCloudError

from ..http import Transport, new_session
from ..verify import check_stored
from .config import DEFAULT, TransferConfig
from .parallel import run_parallel
from .progress import Progress
from .renew import BATCH, UrlBook, with_renewal
from .retry import send_presigned


def _read(path: Path, offset: int, length: int) -> bytes:
    with open(path, "rb") as f:
        f.seek(offset)
        return f.read(length)


def _put(
    session: requests.Session, url: str, data: bytes, digest: bytes, config: TransferConfig
) -> requests.Response:
    """One PUT of a part, sent again while it may yet succeed (retry.py); S3's last answer."""
    headers = {"x-amz-checksum-sha256": content.b64(digest)}
    return send_presigned(
        lambda: session.put(url, data=data, headers=headers, timeout=config.part_timeout), config
    )


def _put_part(
    session: requests.Session,
    book: UrlBook,
    n: int,
    data: bytes,
    digest: bytes,
    config: TransferConfig = DEFAULT,
) -> None:
    r = with_renewal(book, str(n), lambda url: _put(session, url, data, digest, config))
    if r is None or r.status_code != 200:
        status = "no URL" if r is None else f"{r.status_code}: {r.text[:200]}"
        raise HyCloudError(f"S3 refused part {n} ({status})", code="part-upload-failed")


def _part_urls(http: Transport, content_hash: str, keys: list[str]) -> dict[str, str]:
    """PUT URLs for these parts (at most BATCH), from the upload the start opened."""
    parts = [int(k) for k in keys[:BATCH]]
    return http.json("POST", "/v1/uploads/urls", json={"content_hash": content_hash, "parts": parts})["urls"]


def _upload_parts(
    http: Transport,
    path: Path,
    size: int,
    state: dict,
    digests: list[bytes],
    progress: Progress,
    config: TransferConfig = DEFAULT,
) -> UrlBook:
    """PUT the missing parts; a part whose URL expired before it was sent gets a fresh one (with
    the other parts still to send) and is sent again. The URLs used, and how often renewed."""
    progress.advance(sum(content.part_range(size, n)[1] for n in state["parts_done"]))
    missing, content_hash = list(state["missing"]), state["content_hash"]
    book = UrlBook(state["urls"], lambda keys: _part_urls(http, content_hash, keys))
    session = new_session()

    def send(n: int) -> None:
        offset, length = content.part_range(size, n)
        _put_part(session, book, n, _read(path, offset, length), digests[n - 1], config)
        book.done(str(n))
        progress.advance(length)

    while missing:
        batch = [n for n in missing if book.has(str(n))]
        if not batch:
            book.add(_part_urls(http, content_hash, [str(n) for n in missing]))
            continue
        for _ in run_parallel(send, batch, config.workers):
            pass
        missing = [n for n in missing if n not in batch]
    return book


def upload_large(
    http: Transport,
    local: str | Path,
    remote: str,
    parents: bool = False,
    progress: Progress | None = None,
    keep: dict | None = None,
    headers: dict[str, str] | None = None,
    config: TransferConfig = DEFAULT,
) -> dict:
    """Upload a large file; `keep` (mtime, mode) goes with the commit, for the file's metadata,
    and `headers` (preconditions) with the commit request; `config`: parallelism and retries."""
    path, progress = Path(local), progress or Progress()
    size = os.path.getsize(path)
    progress.start(f"hash {path.name}", size)
    content_hash, digests, sha256 = content.hash_file_and_sha256(path)
    for _ in range(3):
        state = http.json(
            "POST",
            "/v1/uploads",
            json={
                "size": size,
                "content_hash": content_hash,
                "part_digests": [content.b64(d) for d in digests],
                "path": remote,  # checked before any part is sent, and again at the commit
                "parents": parents,
            },
        )
        proof, sent = None, 0
        progress.start(f"upload {path.name}", size)
        if state["dedup"]:
            ranges = state["challenge"]["ranges"]
            proof = content.possession_proof(
                state["challenge"]["nonce"], [_read(path, o, n) for o, n in ranges]
            )
            progress.advance(size)
        else:
            if state["parts_done"]:
                progress.note(f"resuming: {len(state['parts_done'])} of {len(digests)} parts done")
            sent = size - sum(content.part_range(size, n)[1] for n in state["parts_done"])
            _upload_parts(http, path, size, state, digests, progress, config)
        try:
            entry = http.json(
                "POST",
                "/v1/uploads/commit",
                json={
                    "path": remote,
                    "content_hash": content_hash,
                    "proof": proof,
                    "parents": parents,
                    "sha256": sha256,
                    **(keep or {}),
                },
                headers=headers,
            )
        except ConflictError as err:
            if err.code not in ("upload-required", "upload-incomplete"):
                raise
            continue
        check_stored(remote, entry.get("content_hash"), content_hash)
        return {**entry, "dedup": state["dedup"], "sent_bytes": sent}
    raise HyCloudError(f"upload of {path} did not complete after 3 attempts", code="upload-failed")
