"""Committing an uploaded bundle: each member on its own, as a single PUT of it would be.

Used by the controller for a bundle sent in its request and by the bundle job for one staged in
S3 (queued in the FOP queue as a transfer, docs/SCHEDULING.md), so both answer the same.
"""

from __future__ import annotations

import hashlib
from typing import Any

from .. import bundle, content, jobs, paths
from ..errors import BadRequestError, ConflictError, HyCloudError, PayloadTooLargeError
from .namespace import Entry
from .operations import ABSENT, FileSystem
from .small_batch import SmallWrite, put_small_batch

Members = list[tuple[bundle.Member, bytes]]


def commit_members(
    fs: FileSystem, members: Members, max_size: int, parents: bool, root: str = "/"
) -> list[dict[str, Any]]:
    """One result per member, in order: committed, or why not (the others commit regardless).
    A member outside `root` (the folder the job was queued for) is refused."""
    checked = [
        _checked(m, data, first, max_size, root)
        for (m, data), first in zip(members, _first_of_each_path(members), strict=True)
    ]
    writes = [c for c in checked if isinstance(c, SmallWrite)]
    done = iter(put_small_batch(fs, writes, parents=parents))
    return [
        _result(m, data, c if isinstance(c, HyCloudError) else next(done))
        for (m, data), c in zip(members, checked, strict=True)
    ]


def staged_size(s3: Any, bucket: str, user: str, digest: str) -> int:
    """The size of the bundle `user` staged under `digest`; 409 when none, 413 when too large."""
    try:
        head = s3.head_object(Bucket=bucket, Key=jobs.staged_key(user, digest))
    except s3.exceptions.ClientError:
        raise ConflictError("nothing staged under that sha256; PUT it first", code="not-staged") from None
    if head["ContentLength"] > bundle.MAX_STAGED:
        raise PayloadTooLargeError(f"a staged bundle is at most {bundle.MAX_STAGED} bytes", code="too-large")
    return int(head["ContentLength"])


def take_staged(s3: Any, bucket: str, user: str, digest: str) -> bytes:
    """The bundle `user` staged under `digest` (S3 checked the sha256 at its PUT), taken out of
    staging: a bundle is committed once, and sent again in full if its answer was lost."""
    staged_size(s3, bucket, user, digest)
    key = jobs.staged_key(user, digest)
    body: bytes = s3.get_object(Bucket=bucket, Key=key)["Body"].read()
    s3.delete_object(Bucket=bucket, Key=key)
    if hashlib.sha256(body).hexdigest() != digest:
        raise BadRequestError("the staged bundle is not what its sha256 says", code="hash-mismatch")
    return body


def _first_of_each_path(members: Members) -> list[bool]:
    """Whether each member is the first to name its path (two writes of one path would race)."""
    seen: set[str] = set()
    firsts = []
    for member, _ in members:
        path = _canonical(member.path)
        firsts.append(path not in seen)
        seen.add(path)
    return firsts


def _canonical(path: str) -> str:
    try:
        return paths.normalize(path)
    except HyCloudError:
        return path


def _checked(
    member: bundle.Member, data: bytes, first: bool, max_size: int, root: str
) -> SmallWrite | HyCloudError:
    """The member as a write, or why it cannot be one."""
    try:
        if not first:
            raise BadRequestError("the bundle names this path twice", code="duplicate-path")
        path = bundle.check_member(member, data, max_size)
        if root != "/" and not path.startswith(root.rstrip("/") + "/"):
            raise BadRequestError(f"{path} is outside the bundle's folder {root}", code="outside-root")
    except HyCloudError as err:
        return err
    expect = ABSENT if member.expect == bundle.ABSENT else member.expect
    return SmallWrite(path, data, member.sha256, member.mtime, member.mode, expect)


def _result(member: bundle.Member, data: bytes, outcome: Entry | HyCloudError) -> dict[str, Any]:
    if isinstance(outcome, HyCloudError):
        return bundle.error_entry(member.path, outcome)
    return {
        **outcome.to_dict(),
        "status": "ok",
        "sha256": member.sha256,
        "content_hash": content.hash_bytes(data),
    }
