"""Many files to and from the cloud: small ones in bundles (hycloud_core.bundle), large ones alone.

On a long link a small file costs a round trip, not its bytes: a tree of small files sent one
request each spends its time waiting. Here small files travel many to a request, several requests
at once (files are independent, so order does not matter), and each comes back with its own
status. A file that failed is sent once more, then reported in its result ("status": "error"); the
others are not held back by it. Large files go through `client.put` / `client.get` as always.
Files keep their modification time and mode bits both ways, as `sdk/trees.py` does.
"""

from __future__ import annotations

import hashlib
import io
import os
import posixpath
import stat
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hycloud_core import bundle, content, paths
from hycloud_core.errors import HyCloudError, error_from_body

from ..transfer import Progress
from ..transfer.config import DEFAULT
from ..transfer.jobs import JobPoll, follow_job
from ..transfer.staging import stage
from ..verify import check_stored
from .subscribers import ProgressLike, as_progress, report

if TYPE_CHECKING:
    from .client import HyCloud

OCTET = "application/octet-stream"
MEMBERS = 64  # files per upload bundle: the cloud commits them side by side within a few seconds
RAW = 8 * 1024 * 1024  # bytes per upload bundle before compression
SPREAD = 16  # with at least this many files per bundle, use all the requests in flight
PATHS = 200  # paths per download request (the answer says which did not fit: asked again)
JOB_WAIT_S = 20  # a staged bundle's job: each poll held this long by the cloud while it runs
BUNDLE_JOB = JobPoll("/v1/bundles/jobs", {}, JOB_WAIT_S, running=("queued", "running"))
TRIES = 2  # a failed file is re-queued once


@dataclass
class _Upload:
    index: int
    local: Path
    remote: str
    size: int
    mtime: float
    mode: int
    expect: str | None = None


def put_files(
    client: HyCloud,
    pairs: Sequence[tuple[str | Path, str]],
    progress: ProgressLike = None,
    expect: Mapping[str, str] | None = None,
    parallel: int | None = None,
) -> list[dict]:
    """Upload each local file to its remote path (parents made as needed); one result per pair,
    in order: `{"path", "status": "ok", ...what client.put returns}` or `{"path", "status":
    "error", "error": message, "code"}`. `expect` maps a remote path to the version it must hold
    (`preconditions.py`): a file whose path holds another fails with `version-mismatch`, not sent
    again. `parallel`: requests in flight at once (default: the client's TransferConfig.files)."""
    results: list[dict] = [{} for _ in pairs]
    lock, progress = threading.Lock(), as_progress(progress)
    small, large = _plan_uploads(client, pairs, results, expect or {})

    def done(item: _Upload, result: dict) -> None:
        with lock:
            results[item.index] = result
            if result["status"] == "ok" and result.get("storage") == "small":  # large: reported as sent
                report(progress, f"upload {item.local.name}", item.size)

    parallel = parallel or client.transfer.files
    with ThreadPoolExecutor(parallel) as pool:
        for _ in range(TRIES):
            jobs = [pool.submit(_send_bundle, client, group, done) for group in _groups(small, parallel)]
            jobs += [pool.submit(_put_large, client, item, done, progress) for item in large]
            for job in jobs:
                job.result()
            small = [i for i in small if _again(results[i.index])]
            large = [i for i in large if _again(results[i.index])]
    return results


def _again(result: dict) -> bool:
    """A failed file is sent once more, unless its path held another version than it expected."""
    return result["status"] != "ok" and result.get("code") != "version-mismatch"


def _plan_uploads(
    client: HyCloud, pairs: Sequence[tuple[str | Path, str]], results: list[dict], expect: Mapping[str, str]
) -> tuple[list[_Upload], list[_Upload]]:
    """Small and large uploads; a pair that cannot be sent at all gets its error result now."""
    threshold = client.small_file_threshold if pairs else 0
    small: list[_Upload] = []
    large: list[_Upload] = []
    for index, (local, remote) in enumerate(pairs):
        try:
            path = paths.normalize(remote)
            st = Path(local).stat()
        except HyCloudError as err:
            results[index] = _failed(remote, err)
            continue
        except OSError as err:
            results[index] = _failed(
                remote, HyCloudError(f"{local}: {err.strerror}", code="no-such-local-file")
            )
            continue
        mode = stat.S_IMODE(st.st_mode) & 0o777
        item = _Upload(index, Path(local), path, st.st_size, st.st_mtime, mode, expect.get(path))
        (small if st.st_size <= threshold else large).append(item)
    return small, large


def _groups(items: list[_Upload], parallel: int = DEFAULT.files) -> Iterator[list[_Upload]]:
    """Bundles of at most MEMBERS files and RAW bytes, spread over `parallel` requests when there
    are enough files for it."""
    per = max(1, min(MEMBERS, max(SPREAD, -(-len(items) // parallel))))
    group: list[_Upload] = []
    size = 0
    for item in items:
        if group and (len(group) >= per or size + item.size > RAW):
            yield group
            group, size = [], 0
        group.append(item)
        size += item.size
    if group:
        yield group


def _send_bundle(client: HyCloud, group: list[_Upload], done: Callable[[_Upload, dict], None]) -> None:
    """Read, pack and send one bundle (staged in S3 when too large for a request, halved past
    what a staged bundle may be); report every file."""
    files, sent = [], []
    for item in group:
        try:
            data = item.local.read_bytes()
        except OSError as err:
            done(item, _failed(item.remote, HyCloudError(f"{item.local}: {err.strerror}", code="unreadable")))
            continue
        files.append((bundle.member_of(item.remote, data, item.mtime, item.mode, item.expect), data))
        sent.append(item)
    if not files:
        return
    body = bundle.pack(files)
    if len(body) > bundle.MAX_STAGED and len(sent) > 1:
        half = len(sent) // 2
        _send_bundle(client, sent[:half], done)
        _send_bundle(client, sent[half:], done)
        return
    try:
        answer = _post_bundle(client, body, _root([item.remote for item in sent]))
        for item, (member, data), entry in zip(sent, files, answer["files"], strict=True):
            done(item, _stored(item, member, data, entry))
    except HyCloudError as err:  # the whole bundle was refused or lost: every file failed
        for item in sent:
            done(item, _failed(item.remote, err))


def _post_bundle(client: HyCloud, body: bytes, root: str) -> dict:
    """One bundle in the request, or staged in S3 first when too large for one (incompressible
    files): one presigned PUT and one request instead of several smaller bundles. A staged
    bundle's commit is a queued job in the cloud: followed until it ends."""
    params: dict[str, str] = {"parents": "true", "root": root}
    if len(body) <= bundle.MAX_BODY:
        return client.http.json(
            "POST", "/v1/bundles", params=params, data=body, headers={"Content-Type": OCTET}
        )
    params["staged"] = stage(client.http, io.BytesIO(body), client.transfer)
    answer = client.http.json("POST", "/v1/bundles", params=params, data=b"", headers={"Content-Type": OCTET})
    if answer.get("state") in BUNDLE_JOB.running:
        answer = follow_job(client.http, replace(BUNDLE_JOB, params={"job": answer["job"]}), answer)
    if answer.get("state") == "failed":
        raise error_from_body(int((answer.get("error") or {}).get("status", 500)), answer)
    return answer


def _root(remotes: list[str]) -> str:
    """The folder all of a bundle's files are in: the cloud keeps jobs below it in request order."""
    return posixpath.commonpath([posixpath.dirname(r) for r in remotes])


def _stored(item: _Upload, member: bundle.Member, data: bytes, entry: dict) -> dict:
    """A member's answer as `client.put` would have answered a single upload of it."""
    if entry.get("status") != "ok":
        error = entry.get("error") or {}
        return {
            "path": item.remote,
            "status": "error",
            "error": error.get("message", "failed"),
            **_code(error),
        }
    try:
        check_stored(item.remote, entry.get("sha256"), member.sha256)
    except HyCloudError as err:
        return _failed(item.remote, err)
    result = {k: v for k, v in entry.items() if k not in ("sha256", "status")}
    return {**result, "content_hash": content.hash_bytes(data), "mode": "small", "status": "ok"}


def _put_large(
    client: HyCloud, item: _Upload, done: Callable[[_Upload, dict], None], progress: Progress
) -> None:
    try:
        keep: dict[str, Any] = {"mtime": item.mtime, "mode": item.mode, "expect": item.expect}
        result = client.put(item.local, item.remote, parents=True, progress=progress, **keep)
    except HyCloudError as err:
        done(item, _failed(item.remote, err))
    else:
        done(item, {**result, "status": "ok"})


# --- downloads -------------------------------------------------------------------------------
def get_files(
    client: HyCloud,
    pairs: Sequence[tuple[str, str | Path]],
    progress: ProgressLike = None,
    parallel: int | None = None,
) -> list[dict]:
    """Download each remote file to its local path (folders made as needed), replacing a local
    file only once its bytes verified; one result per pair, in order: `{"path", "status": "ok",
    "local", "size", "content_hash"}` or `{"path", "status": "error", "error": message, "code"}`."""
    results: list[dict] = [{} for _ in pairs]
    lock, progress = threading.Lock(), as_progress(progress)
    wanted: list[tuple[int, str, Path]] = []
    for index, (remote, local) in enumerate(pairs):
        try:
            wanted.append((index, paths.normalize(remote), Path(local)))
        except HyCloudError as err:
            results[index] = _failed(remote, err)

    def done(index: int, result: dict, reported: bool = False) -> None:
        with lock:
            results[index] = result
            if result["status"] == "ok" and not reported:
                report(progress, f"download {Path(result['path']).name}", result["size"])

    with ThreadPoolExecutor(parallel or client.transfer.files) as pool:
        for _ in range(TRIES):
            queue = list(wanted)
            while queue:  # an answer serves at least one file, so this ends
                chunks = [queue[i : i + PATHS] for i in range(0, len(queue), PATHS)]
                answers = list(pool.map(lambda chunk: _fetch_bundle(client, chunk, done), chunks))
                large = [item for _, chunk_large in answers for item in chunk_large]
                for index, result in pool.map(
                    lambda item: _get_large(client, item[0], item[1], item[2], item[3], progress), large
                ):
                    done(index, result, reported=True)
                queue = [item for later, _ in answers for item in later]
            wanted = [w for w in wanted if results[w[0]].get("status") != "ok"]
    return results


def _fetch_bundle(
    client: HyCloud, chunk: list[tuple[int, str, Path]], done: Callable[[int, dict], None]
) -> tuple[list[tuple[int, str, Path]], list[tuple[int, str, Path, dict]]]:
    """Ask for one chunk's files and write those that came; return those the answer had no room
    for, and the large ones (fetched alone)."""
    try:
        response = client.http.request(
            "POST",
            "/v1/bundles/download",
            json={"paths": sorted({path for _, path, _ in chunk})},
            headers={"Accept": OCTET},  # else API Gateway answers the bundle base64-encoded
        )
        answer = bundle.unpack(response.content)
    except HyCloudError as err:
        for index, path, _ in chunk:
            done(index, _failed(path, err))
        return [], []
    served = {m.path: (m, data) for m, data in answer.files}
    others = {o.get("path"): o for o in answer.others}
    later, large = [], []
    for index, path, local in chunk:
        if path in served:
            done(index, _write(path, local, *served[path]))
        elif others.get(path, {}).get("status") == "large":
            large.append((index, path, local, others[path]))
        elif others.get(path, {}).get("status") == "later":
            later.append((index, path, local))
        else:
            error = others.get(path, {}).get("error") or {"message": "not in the answer"}
            done(index, {"path": path, "status": "error", "error": error.get("message", ""), **_code(error)})
    return later, large


def _write(path: str, local: Path, member: bundle.Member, data: bytes) -> dict:
    """Write a served file in place of `local` once it verified, with its mtime and mode."""
    if hashlib.sha256(data).hexdigest() != member.sha256:
        return _failed(
            path, HyCloudError(f"download of {path} is corrupt (sha256 mismatch)", code="corrupt-download")
        )
    tmp = local.with_name(local.name + ".hycloud-part")
    try:
        local.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_bytes(data)
        _restore(tmp, member.mtime, member.mode)
        tmp.replace(local)
    except OSError as err:
        tmp.unlink(missing_ok=True)
        return _failed(path, HyCloudError(f"{local}: {err.strerror}", code="unwritable"))
    return _got(path, local, len(data), content.hash_bytes(data))


def _get_large(
    client: HyCloud, index: int, path: str, local: Path, entry: dict, progress: Progress
) -> tuple[int, dict]:
    try:
        local.parent.mkdir(parents=True, exist_ok=True)
        client.get(path, local, progress=progress)
        _restore(local, entry.get("mtime"), entry.get("mode"))
    except HyCloudError as err:
        return index, _failed(path, err)
    except OSError as err:
        return index, _failed(path, HyCloudError(f"{local}: {err.strerror}", code="unwritable"))
    return index, _got(path, local, local.stat().st_size, entry.get("content_hash", ""))


def _restore(local: Path, mtime: float | None, mode: int | None) -> None:
    if mode is not None:
        os.chmod(local, mode & 0o777)
    if mtime is not None:
        os.utime(local, (mtime, mtime))


def _got(path: str, local: Path, size: int, content_hash: str) -> dict:
    return {"path": path, "status": "ok", "local": str(local), "size": size, "content_hash": content_hash}


def _failed(path: str, err: HyCloudError) -> dict:
    return {
        "path": path,
        "status": "error",
        "error": err.message,
        "code": err.code,
        "http_status": err.status,
    }


def _code(error: dict) -> dict:
    return {"code": error.get("code", "failed"), "http_status": error.get("status", 500)}


def raise_first_error(results: list[dict]) -> None:
    """Raise the first failure among `results` as the error it was (for callers that stop on one)."""
    for result in results:
        if result.get("status") == "error":
            message = f"{result['path']}: {result['error']}"
            body = {"error": {"code": result.get("code", "failed"), "message": message}}
            raise error_from_body(result.get("http_status", 500), body)
