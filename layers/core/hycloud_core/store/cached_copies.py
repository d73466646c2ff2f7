"""Copies the controller makes so a file can be handed out as one presigned URL (a shared small
file copied from EFS, a coded file made whole): `shares/<content hash>`, kept a day by the
bucket's lifecycle rule.

Every copy is keyed by the same kind of hash, the content hash of its bytes (`content.py`), and
is stored with S3's SHA-256 checksums (8 MiB parts, as the content hash is defined), so S3 itself
reports what a key holds. A copy is reused only when that report equals the key's hash: a key
that held anything else (an older layout, a failed write, another kind of hash) is never served
for it, whoever wrote it.
"""

from __future__ import annotations

import base64
import hashlib
from typing import Any

from botocore.exceptions import ClientError

from .. import content

PREFIX = "shares/"  # also named in the bucket's lifecycle rule (infra data_stores.py)


def key_of(content_hash: str) -> str:
    return f"{PREFIX}{content.checked_hash(content_hash)}"


def stored_content_hash(head: dict[str, Any]) -> str | None:
    """The content hash of an object, from the SHA-256 checksum S3 keeps for it (HEAD with
    ChecksumMode=ENABLED): a composite `<b64>-N` is sha256 over the part digests already; a whole
    object's is the one part's digest."""
    checksum = head.get("ChecksumSHA256")
    if not checksum:
        return None
    value, _, parts = checksum.partition("-")
    digest = base64.b64decode(value)
    return digest.hex() if parts else hashlib.sha256(digest).hexdigest()


def holds(s3: Any, bucket: str, key: str, content_hash: str) -> bool:
    """Whether `bucket/key` exists and S3 vouches it holds exactly the content `content_hash`."""
    try:
        head = s3.head_object(Bucket=bucket, Key=key, ChecksumMode="ENABLED")
    except ClientError:
        return False
    return stored_content_hash(head) == content_hash


def put_bytes(s3: Any, bucket: str, data: bytes) -> str:
    """The key of a verified copy of `data`, written now unless one is there already."""
    digest = content.hash_bytes(data)
    key = key_of(digest)
    if not holds(s3, bucket, key, digest):
        checksum = content.b64(hashlib.sha256(data).digest())
        s3.put_object(Bucket=bucket, Key=key, Body=data, ChecksumSHA256=checksum)
    return key
