"""Delta transfers: only a compressed delta crosses the client's link (seed 000 §III-B).

Download: the client names the version it holds by content hash; the cloud answers with a
version-aware delta when it still has that version, or asks for the checksum list at the file's
adaptive chunk size and sends an rsync-style delta. After patching, the elimination ratios of
all candidate sizes are measured and the file's chunk-size probabilities updated in the cloud.

Upload: the client holds its base version and the new one, computes a delta, and applies eq. 2
to choose between sending the delta (the cloud patches on EFS) and a direct upload to S3.
"""

from __future__ import annotations

import base64
import io
import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, BinaryIO, cast

from hycloud_core import content, jobs
from hycloud_core.delta import CANDIDATE_SIZES, PredictiveChunkSize, should_delta_upload, versioned
from hycloud_core.delta import delta as rsync_delta
from hycloud_core.delta.adaptive import measure_candidates
from hycloud_core.delta.apply import apply_delta
from hycloud_core.delta.errors import DeltaFormatError
from hycloud_core.delta.signature import fitting_block_size
from hycloud_core.delta.sync import SPOOL_BYTES, fetch_and_patch
from hycloud_core.delta.sync import signature as rsync_signature
from hycloud_core.errors import ConflictError, HyCloudError, NotFoundError
from hycloud_core.hashing_writer import HashingWriter

from ..http import Transport, new_session
from ..verify import check_stored
from . import auto, background
from .config import DEFAULT, TransferConfig
from .jobs import JobPoll, JobTimeout, follow_job
from .place import put_in_place
from .progress import Progress
from .renew import UrlBook, with_renewal
from .staging import stage

PIECE = 4 * 1024 * 1024
JOB_WAIT_S = 900
START_WAIT_S = 3  # the request that starts a job holds up to this long for its result
LONG_POLL_S = 10  # the controller holds a status request until the job ends, up to this long
MAX_DELTA_BODY = 4 * 1024 * 1024  # larger checksum lists and deltas go through S3
MAX_SIGNATURE = 256 * 1024 * 1024  # the checksum list is held in memory: keep it bounded
ADAPT_SAMPLE = 32 * 1024 * 1024  # γ of each chunk size measured on the files' first 32 MiB
OCTET = "application/octet-stream"
ARRIVING_PIECE = 64 * 1024  # an answer's body read this much at a time as it arrives
NOMINAL_SIZE = 64 * 2**20  # a download's size before the cloud names it (eq. 2's level choice
# scales with the size on both terms: the size moves only the cloud's cap)


def wait_job(http: Transport, job: str, status: dict | None = None) -> dict:
    """The result of the delta job `job` (from `status`, the answer that started it, when given)."""
    poll = JobPoll(
        "/v1/delta/jobs", {"id": job}, LONG_POLL_S, ended=("ready", "failed"), timeout_s=JOB_WAIT_S
    )
    try:
        status = follow_job(http, poll, status or {"job": job, "state": "running"})
    except JobTimeout:
        raise HyCloudError(f"delta job {job} did not finish in {JOB_WAIT_S}s", code="delta-timeout") from None
    if status["state"] == "failed":
        raise _job_error(status)
    return status["result"]


def run_job(
    http: Transport, method: str, route: str, params: dict | None = None, **kwargs
) -> tuple[str, dict]:
    """Start a delta job and follow it to its result: (job id, result). The start request waits up
    to START_WAIT_S for the result itself, so a short job costs one round trip, not two."""
    return _followed(
        http, http.json(method, route, params={**(params or {}), "wait": START_WAIT_S}, **kwargs)
    )


def _followed(http: Transport, answer: dict) -> tuple[str, dict]:
    """(job id, result) of a job from the answer that started it, waiting when it still runs."""
    return answer["job"], wait_job(http, answer["job"], answer)


def delta_from_known(
    http: Transport, path: str, base_hash: str, level: int | None = None, size: int = NOMINAL_SIZE
) -> tuple[dict, tuple[str, dict] | None] | None:
    """The version-aware delta from the version the client holds, asked for straight away (no stat
    first: the answer names the path's current version). (file, (job, result)); (file, None) when
    the client's version is current; None when the cloud cannot (not a large file), and a
    ConflictError `base-unknown` when the cloud no longer holds the client's version.
    `level`: the zstd level asked for, else chosen by eq. 2 for this link (`size`: about the file's)."""
    level = level or auto.chosen_level(http.base, "down", size)
    try:
        answer = by_version(http, path, base_hash, {"wait": START_WAIT_S, "level": level})
    except NotFoundError:
        return None  # the usual way (stat, then whatever fits) says what is there
    except ConflictError as err:
        if err.code == "base-unknown":
            raise
        return None
    file = {"path": path, **answer["file"]}
    return file, None if answer["state"] == "same" else _followed(http, answer)


def by_version(http: Transport, path: str, base_hash: str, params: dict) -> dict:
    """Ask for the version-aware delta from `base_hash` (the answer as `bytes_answer`'s, its
    body left to arrive while the patch decodes it)."""
    return bytes_answer(http, "POST", params, stream=True, json={"path": path, "base_hash": base_hash})


def bytes_answer(http: Transport, method: str, params: dict, stream: bool = False, **body: Any) -> dict:
    """Ask `/v1/delta/download` for a delta, accepting bytes: a ready delta of up to 4 MiB then
    comes as the answer's body (the answer itself in jobs.ANSWER_HEADER), one request with no
    base64, and is kept in the result as `delta_body`; with `stream`, the response is kept as
    `delta_stream`, its body not read yet."""
    response = http.request(
        method,
        "/v1/delta/download",
        params=params,
        headers={"Accept": f"{OCTET}, application/json;q=0.9", **body.pop("headers", {})},
        stream=stream,
        **body,
    )
    if not response.headers.get("Content-Type", "").startswith(OCTET):
        return response.json()
    try:
        answer = json.loads(response.headers[jobs.ANSWER_HEADER])
        answer["result"]["delta_stream" if stream else "delta_body"] = (
            response if stream else response.content
        )
    except (KeyError, TypeError, ValueError):
        response.close()
        raise HyCloudError("a delta answer without its state", code="corrupt-download") from None
    return answer


class _Arriving:
    """An answer's body read as it arrives, for a patch that decodes each window once its frame
    is in (the rest still on the link), held to the size the answer names."""

    def __init__(self, response: Any, size: int) -> None:
        self.pieces: Iterator[bytes] | None = response.iter_content(ARRIVING_PIECE)
        self.buffer, self.size, self.got = bytearray(), size, 0

    def read(self, n: int = -1) -> bytes:
        while self.pieces is not None and (n < 0 or len(self.buffer) < n):
            piece = next(self.pieces, None)
            if piece is None:
                self.pieces = None
                break
            self.buffer += piece
            self.got += len(piece)
        n = len(self.buffer) if n < 0 else n
        data = bytes(self.buffer[:n])
        del self.buffer[:n]
        return data

    def finish(self) -> None:
        """Refuse a body longer or shorter than the answer said, once the patch has read its part."""
        if self.read() or self.got != self.size:
            raise HyCloudError("the delta in the answer has the wrong length", code="corrupt-download")


def _job_error(status: dict) -> HyCloudError:
    """A failed job's error: `{"code", "message"}` or the older `error`/`cause` strings."""
    error = status.get("error")
    if isinstance(error, dict):
        return HyCloudError(
            f"delta job failed: {error.get('message', '')}",
            code=error.get("code") or "delta-job-failed",
            status=error.get("status"),
        )
    return HyCloudError(f"delta job failed: {error}: {status.get('cause', '')}", code="delta-job-failed")


def _fetch_delta(
    http: Transport, job: str, result: dict, out: BinaryIO, config: TransferConfig = DEFAULT
) -> None:
    """The job's delta: inline in its result when small, by presigned URL from S3 when the cloud
    put it there, else through the API."""
    if result.get("delta") or result.get("delta_body"):
        data = result.get("delta_body") or base64.b64decode(result["delta"])
        if len(data) != result["delta_size"]:
            raise HyCloudError("the inline delta is truncated", code="corrupt-download")
        out.write(data)
        return
    if result.get("delta_url"):
        session, book = new_session(), UrlBook({job: result["delta_url"]}, lambda _: _delta_url(http, job))
        response = with_renewal(
            book, job, lambda url: session.get(url, stream=True, timeout=config.stage_timeout)
        )
        assert response is not None  # a delta's URL is always renewed (_delta_url), never dropped
        with response:
            if response.status_code != 200:
                raise HyCloudError(
                    f"delta download failed ({response.status_code})", code="delta-unavailable"
                )
            for piece in response.iter_content(1 << 20):
                out.write(piece)
        return
    size = result["delta_size"]
    for offset in range(0, size, PIECE):
        piece = http.request(
            "GET",
            "/v1/delta/data",
            params={"id": job, "offset": offset, "length": min(PIECE, size - offset)},
            headers={"Accept": OCTET},
        ).content
        out.write(piece)


def _delta_url(http: Transport, job: str) -> dict[str, str]:
    """The finished job's delta URL once more (S3 refused the one it came with as expired)."""
    status = http.json("GET", "/v1/delta/jobs", params={"id": job})
    url = (status.get("result") or {}).get("delta_url")
    if status["state"] != "ready" or not url:
        raise HyCloudError(f"the delta of job {job} is no longer available", code="delta-unavailable")
    return {job: url}


def _chunking(info: dict) -> PredictiveChunkSize:
    state = info.get("chunk_state") or {}
    try:
        return PredictiveChunkSize.from_dict(state) if state else PredictiveChunkSize()
    except (TypeError, ValueError, KeyError):
        return PredictiveChunkSize()


class _ListTooLarge(Exception):
    """The checksum list (after a retry with full-length sums) does not fit one request."""


def _version_aware_job(http: Transport, path: str, base_hash: str, size: int) -> tuple[str, dict] | None:
    """Run a version-aware delta when the cloud still has our version, at the zstd level eq. 2
    chooses for this link; None when the cloud lacks our version."""
    params = {"level": auto.chosen_level(http.base, "down", size), "wait": START_WAIT_S}
    try:
        return _followed(http, by_version(http, path, base_hash, params))
    except ConflictError as err:
        if err.code != "base-unknown":
            raise
        return None


def _patch_version_aware(
    http: Transport,
    ran: tuple[str, dict],
    old: BinaryIO,
    out: BinaryIO,
    started: float,
    config: TransferConfig = DEFAULT,
) -> dict:
    job, result = ran
    job_seconds = time.perf_counter() - started
    arriving = result.pop("delta_stream", None)
    if arriving is not None:
        return _patch_arriving(arriving, result, old, out, job_seconds)
    with tempfile.SpooledTemporaryFile(max_size=SPOOL_BYTES) as delta_file:
        spooled = cast(BinaryIO, delta_file)  # a binary file, in memory then on disk
        _fetch_delta(http, job, result, spooled, config)
        fetched = time.perf_counter()
        delta_file.seek(0)
        hashing = HashingWriter([out.write])
        try:
            # written front to back only; its content hash, taken as it passes, is checked by the
            # caller, so the delta's own sha256 is not taken again
            apply_delta(old, spooled, cast(BinaryIO, hashing), check=False)
        finally:
            hashing.close()
    steps = {
        "job": job_seconds,
        "fetch": fetched - started - job_seconds,
        "apply": time.perf_counter() - fetched,
    }
    return _version_traffic(result, steps, hashing.content_hash, job_seconds)


def _patch_arriving(response: Any, result: dict, old: BinaryIO, out: BinaryIO, job_seconds: float) -> dict:
    """Patch from the answer's body as it arrives: each window decodes once its frame is in, while
    the next frames are still on the link (the content hash, taken as the bytes pass, is checked
    by the caller, so the delta's own sha256 is not taken)."""
    begun = time.perf_counter()
    hashing = HashingWriter([out.write])
    try:
        body = _Arriving(response, result["delta_size"])
        versioned.apply(old, cast(BinaryIO, body), cast(BinaryIO, hashing), check=False)
        body.finish()
    except DeltaFormatError as err:
        raise HyCloudError(f"the delta in the answer is corrupt: {err}", code="corrupt-download") from None
    finally:
        hashing.close()
        response.close()
    steps = {"job": job_seconds, "fetch": 0.0, "apply": time.perf_counter() - begun}
    return _version_traffic(result, steps, hashing.content_hash, job_seconds)


def _version_traffic(result: dict, steps: dict, content_hash: str, job_seconds: float) -> dict:
    if "encode_seconds" in result:
        steps["cloud_encode"] = result["encode_seconds"]
    return {
        "steps": steps,
        "content_hash": content_hash,
        "kind": result["kind"],
        "sent_bytes": 0,
        "received_bytes": result["delta_size"],
        "job_seconds": job_seconds,
        "s3_efs_rate": result.get("s3_efs_rate"),
        "instance": result.get("instance"),
    }


def _patch_rsync(
    http: Transport, path: str, block: int, old: BinaryIO, out: BinaryIO, config: TransferConfig = DEFAULT
) -> dict:
    """Checksum list up, rsync-style delta down, patch: the core's flow, which retries a patch that
    does not verify with full-length strong sums."""
    steps: dict[str, float] = {}
    traffic: dict[str, Any] = {
        "kind": "rsync",
        "sent_bytes": 0,
        "received_bytes": 0,
        "job_seconds": 0.0,
        "steps": steps,
    }

    def fetch_delta(sig: bytes, sink: BinaryIO) -> None:
        if len(sig) > MAX_SIGNATURE:
            raise _ListTooLarge
        started = time.perf_counter()
        params = {"path": path}
        if len(sig) > MAX_DELTA_BODY:
            params["staged"], sig_body = stage(http, io.BytesIO(sig), config), b""
        else:
            sig_body = sig
        answer = bytes_answer(
            http, "PUT", {**params, "wait": START_WAIT_S}, data=sig_body, headers={"Content-Type": OCTET}
        )
        traffic["file"] = answer.get("file") or {}  # the version the delta leads to
        job, result = _followed(http, answer)
        traffic["job_seconds"] += time.perf_counter() - started
        traffic["s3_efs_rate"] = result.get("s3_efs_rate")
        traffic["instance"] = result.get("instance")  # where the job ran (a coded file's: the optimal one)
        fetching = time.perf_counter()
        _fetch_delta(http, job, result, sink, config)
        steps["job"] = steps.get("job", 0.0) + fetching - started
        steps["fetch"] = steps.get("fetch", 0.0) + time.perf_counter() - fetching
        steps["cloud_encode"] = steps.get("cloud_encode", 0.0) + result.get("encode_seconds", 0.0)
        traffic["sent_bytes"] += len(sig)
        traffic["received_bytes"] += result["delta_size"]

    fetch_and_patch(old, block, fetch_delta, out)
    return traffic


def delta_download(
    http: Transport,
    info: dict,
    base: Path,
    target: Path,
    progress: Progress | None = None,
    adapt: bool = True,
    mode: str = "auto",
    base_hash: str | None = None,
    ran: tuple[str, dict] | None = None,
    config: TransferConfig = DEFAULT,
    learned: Callable[[str, dict], None] | None = None,
) -> dict | None:
    """Bring `target` to the remote version described by `info` from the local `base` version.

    `mode="rsync"` skips the version-aware attempt; `ran` is a version-aware job already run. Returns traffic figures: bytes sent
    (checksum list) and received (delta), and the delta kind; None when the cloud lacks the base
    and no checksum list of the file fits MAX_SIGNATURE (the caller downloads the whole file).
    Lists and deltas over one API request go through S3 by presigned URL.

    `info` without a content hash (no stat first; its size that of the local copy): an rsync-style
    delta to whatever version the cloud holds, which its answer names (`file` in the figures).
    `learned` is told the version's chunk-size state once measured anew.
    """
    progress = progress or Progress()
    path, new_hash = info["path"], info.get("content_hash")
    if base_hash is None:  # unknown unless the client remembers transferring this very file
        progress.start(f"hash {base.name}", os.path.getsize(base))
        base_hash = content.hash_file(base)[0]
    if base_hash == new_hash:
        if base.resolve() != target.resolve():
            shutil.copyfile(base, target)
        return {"kind": "same", "sent_bytes": 0, "received_bytes": 0}
    started = time.perf_counter()
    if ran is None and mode != "rsync":
        ran = _version_aware_job(http, path, base_hash, info["size"])
    block = None
    if ran is None:
        wanted = _chunking(info).choose(os.path.getsize(base), info["size"])
        block = fitting_block_size(os.path.getsize(base), wanted, MAX_SIGNATURE, CANDIDATE_SIZES)
        if block is None:
            return None  # no checksum list of this file fits one request
    progress.start(f"delta {target.name}", info["size"])
    tmp_new = target.with_name(target.name + ".hycloud-part")
    try:
        with open(base, "rb") as old, open(tmp_new, "w+b") as out:
            if ran is not None:
                traffic = _patch_version_aware(http, ran, old, out, started, config)
            else:
                assert block is not None  # chosen above when no job ran
                traffic = _patch_rsync(http, path, block, old, out, config)
        answered = traffic.get("file") or {}
        expected = new_hash or answered.get("content_hash")
        if (traffic.pop("content_hash", None) or content.hash_file(tmp_new)[0]) != expected:
            raise HyCloudError(f"delta download of {path} is corrupt", code="corrupt-download")
        progress.advance(info["size"])
        if adapt and traffic["kind"] == "rsync":
            _adapt_later(http, {**info, **answered, "path": path}, base, tmp_new, learned)
        put_in_place(tmp_new, target)
    except _ListTooLarge:
        return None
    finally:
        tmp_new.unlink(missing_ok=True)
    return traffic


def _adapt_later(
    http: Transport, info: dict, old: Path, new: Path, learned: Callable[[str, dict], None] | None = None
) -> None:
    """Measure γ for every candidate chunk size in the background and store the new choice (in
    the cloud, and through `learned` in the client's memory).

    Both files are opened now, before the patched file replaces the old one, so the open handles
    keep both versions readable whatever happens to the paths; the measurement streams them.
    """
    old_file, new_file = open(old, "rb"), open(new, "rb")  # noqa: SIM115 - closed by run()
    old_size, new_size = os.fstat(old_file.fileno()).st_size, os.fstat(new_file.fileno()).st_size

    def run() -> None:
        with old_file, new_file:  # a bounded sample: the measurement streams each file 9 times
            old_sample, new_sample = (
                io.BytesIO(old_file.read(ADAPT_SAMPLE)),
                io.BytesIO(new_file.read(ADAPT_SAMPLE)),
            )
        samples = measure_candidates(old_sample, new_sample)
        chunking = _chunking(info)
        chunking.learn(samples, old_size, new_size)
        if learned is not None:
            learned(info["content_hash"], chunking.to_dict())
        try:
            http.json(
                "POST",
                "/v1/files/chunking",
                json={
                    "path": info["path"],
                    "content_hash": info["content_hash"],
                    "chunk_size": chunking.choose(old_size, new_size),
                    "state": chunking.to_dict(),
                },
            )
        except HyCloudError:
            pass  # the file changed meanwhile: the next download measures again

    background.later("hycloud-adapt", run, timeout=120.0)


def delta_upload(
    http: Transport,
    local: Path,
    remote: str,
    base: Path,
    upload_rate: float,
    kind: str = "version",
    progress: Progress | None = None,
    force: bool = False,
    s3_efs_rate: float = 100 * 2**20,
    base_hash: str | None = None,
    level: int | None = None,
    config: TransferConfig = DEFAULT,
) -> dict | None:
    """Upload `local` as a delta against `base` when eq. 2 says it pays; None means upload directly.
    `base_hash`, when the client knows it, saves reading the base twice. A version-aware delta is
    compressed at `level`, else at the one eq. 2 chooses for `upload_rate` and this machine's CPU."""
    size = os.path.getsize(local)
    if kind == "version":
        level = level or auto.chosen_level(http.base, "up", size, upload_rate)
    base_hash = base_hash or content.hash_file(base)[0]
    with tempfile.TemporaryFile() as delta_file:
        started = time.perf_counter()
        with open(base, "rb") as old, open(local, "rb") as new:
            reader = _HashingReader(new)  # the new version's content hash on the same pass
            new_io = cast(BinaryIO, reader)  # read front to back only
            if kind == "version":
                assert level is not None  # chosen above for a version delta
                versioned.encode(old, os.path.getsize(base), new_io, size, delta_file, level=level)
            else:
                rsync_delta(rsync_signature(old, 1024), new_io, delta_file)
        compute_seconds = time.perf_counter() - started
        compute_rate = size / max(compute_seconds, 1e-6)
        delta_size = delta_file.tell()
        gamma = 1 - delta_size / size if size else 0.0
        pays = should_delta_upload(upload_rate, compute_rate, s3_efs_rate, gamma)
        if not (pays or force):
            return None
        new_hash = reader.hexdigest() if reader.read_all(size) else None
        result = send_delta(
            http, local, remote, base_hash, delta_file, progress, new_hash=new_hash, config=config
        )
    if result is None:
        return None
    steps = {"compute": compute_seconds, **result.get("steps", {})}
    extra = {"level": level} if kind == "version" else {}
    return {**result, "kind": kind, "gamma": gamma, "compute_rate": compute_rate, "steps": steps, **extra}


class _HashingReader:
    """A file read front to back, its content hash taken as it passes."""

    def __init__(self, f: BinaryIO) -> None:
        self.f, self.hasher, self.done = f, content.PartHasher(), 0

    def read(self, n: int = -1) -> bytes:
        data = self.f.read(n)
        self.hasher.update(data)
        self.done += len(data)
        return data

    def read_all(self, size: int) -> bool:
        """Whether every byte passed (a reader that seeks or stops early leaves it to a new pass)."""
        return self.done == size

    def hexdigest(self) -> str:
        return self.hasher.hexdigest()


def signature_upload(
    http: Transport,
    local: Path,
    remote: str,
    base_hash: str,
    sig: bytes,
    pays: Callable[[int, int], bool],
    progress: Progress | None = None,
    config: TransferConfig = DEFAULT,
) -> dict | None:
    """Upload `local` as an rsync-style delta against the checksum list of the version the cloud
    holds (`base_hash`), kept from when that version was transferred: no old bytes needed.
    `pays(size, delta_size)` decides; None means upload directly."""
    size = os.path.getsize(local)
    with tempfile.TemporaryFile() as delta_file:
        started = time.perf_counter()
        with open(local, "rb") as new:
            reader = _HashingReader(new)
            rsync_delta(sig, reader, delta_file)
        compute_seconds = time.perf_counter() - started
        if not pays(size, delta_file.tell()):
            return None
        # the path moved on since this client's transfer: an upload of the whole file replaces it
        result = send_delta(
            http,
            local,
            remote,
            base_hash,
            delta_file,
            progress,
            ("base-unknown", "version-mismatch"),
            new_hash=reader.hexdigest() if reader.read_all(size) else None,
            config=config,
        )
    if result is None:
        return None
    return {**result, "kind": "rsync", "steps": {"compute": compute_seconds, **result["steps"]}}


def send_delta(
    http: Transport,
    local: Path,
    remote: str,
    base_hash: str,
    delta_file: BinaryIO,
    progress: Progress | None,
    give_way: tuple[str, ...] = ("base-unknown",),
    new_hash: str | None = None,
    config: TransferConfig = DEFAULT,
) -> dict | None:
    """Send the delta in `delta_file` (written, position at its end) and follow the job; None when
    the cloud refuses it with one of `give_way` (the caller uploads directly). `new_hash`, when
    known, saves reading the new version again."""
    progress = progress or Progress()
    size, delta_size = os.path.getsize(local), delta_file.tell()
    new_hash = new_hash or content.hash_file(local)[0]
    progress.start(f"delta upload {local.name}", size)
    started = time.perf_counter()
    params = {"path": remote, "base_hash": base_hash, "content_hash": new_hash}
    if delta_size > MAX_DELTA_BODY:
        params["staged"], body = stage(http, delta_file, config), b""
    else:
        delta_file.seek(0)
        body = delta_file.read()
    try:
        _, result = run_job(
            http, "PUT", "/v1/delta/upload", params=params, data=body, headers={"Content-Type": OCTET}
        )
    except ConflictError as err:
        if err.code in give_way:
            return None
        raise
    check_stored(remote, result["entry"].get("content_hash"), new_hash)
    progress.advance(size)
    return {
        **result["entry"],
        "sent_bytes": delta_size,
        "job_seconds": time.perf_counter() - started,
        "s3_efs_rate": result.get("s3_efs_rate"),
        "steps": {"job": time.perf_counter() - started, **result.get("steps", {})},
    }
