"""A relay too large for one function: each Map iteration copies one byte range, the last step verifies.

Every range writes into the same temporary file at its own offset (no other range's bytes are
touched, so a failed range is retried alone) and leaves the sha256 digests of the content-hash
parts it wrote in a small sidecar. The last step joins the sidecars in order: their hash must be
the file's content hash, which proves every byte without reading the file again, and only then
is the file published in the cache.
"""

from __future__ import annotations

import os
import time

from hycloud_core import content
from hycloud_core.fs.relay_cache import RelayCache

PIECE = 1024 * 1024


class RangeCopyFailed(Exception):
    """A range could not be copied (its Step Functions error name; the Map retries that range)."""


class RelayVerifyFailed(Exception):
    """The ranges together are not the version named: nothing is published."""


def temp_file(cache: RelayCache, job: str) -> str:
    return os.path.join(cache.dir, f".hc-ranges-{job}")


def _sidecar(cache: RelayCache, job: str, index: int) -> str:
    return f"{temp_file(cache, job)}.{index}.digests"


def _drill(cache: RelayCache, event: dict) -> None:
    """Failure drill (`range_options.drill_fail_range` in an execution's input; the controller never
    sets it): that range fails on its first attempt only, so a deployment can show that a failed
    range is retried without redoing the others."""
    index = event["range"]["index"]
    if (event.get("options") or {}).get("drill_fail_range") != index:
        return
    marker = _sidecar(cache, event["job"], index) + ".drilled"
    if not os.path.exists(marker):
        open(marker, "w").close()
        raise RangeCopyFailed(f"drill: range {index} fails once")


def copy_range(s3, bucket: str, key: str, cache: RelayCache, event: dict) -> dict:
    """Copy bytes [offset, offset+length) of the object into the job's temporary file."""
    _drill(cache, event)
    offset, length, index = event["range"]["offset"], event["range"]["length"], event["range"]["index"]
    job = event["job"]
    started, done = time.perf_counter(), 0
    fd = os.open(temp_file(cache, job), os.O_WRONLY | os.O_CREAT, 0o640)
    try:
        body = s3.get_object(Bucket=bucket, Key=key, Range=f"bytes={offset}-{offset + length - 1}")["Body"]
        hasher = content.PartHasher()  # the range starts on a part boundary
        for piece in body.iter_chunks(PIECE):
            os.pwrite(fd, piece, offset + done)
            done += len(piece)
            hasher.update(piece)
        digests = hasher.digests()
    except (OSError, s3.exceptions.ClientError) as err:
        raise RangeCopyFailed(f"range {index}: {err}") from None
    finally:
        os.close(fd)
    if done != length:
        raise RangeCopyFailed(f"range {index}: {done} of {length} bytes")
    with open(_sidecar(cache, job, index), "w") as f:
        f.write("".join(d.hex() for d in digests))
    return {"index": index, "size": done, "seconds": time.perf_counter() - started}


def finish(cache: RelayCache, event: dict) -> dict:
    """Check the whole file against its content hash from the ranges' part digests; publish it."""
    job, ranges = event["job"], event["ranges"]
    sidecars = [_sidecar(cache, job, r["index"]) for r in ranges]
    hexes = ""
    for path in sidecars:
        with open(path) as f:
            hexes += f.read()
    got = content.hash_from_parts(bytes.fromhex(hexes[i : i + 64]) for i in range(0, len(hexes), 64))
    tmp, size = temp_file(cache, job), sum(r["length"] for r in ranges)
    try:
        if got != event["content_hash"] or os.path.getsize(tmp) != size:
            os.unlink(tmp)
            raise RelayVerifyFailed(f"the ranges make {got}, not {event['content_hash']}")
        cache.publish(event["cache_name"], tmp, got)
    finally:
        for path in sidecars:
            for leftover in (path, path + ".drilled"):
                if os.path.exists(leftover):
                    os.unlink(leftover)
    return {"cache_name": event["cache_name"], "hit": False, "size": size, "content_hash": got}
