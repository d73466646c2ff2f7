"""A large-file upload as the client performs it, with boto3 standing in for presigned URLs."""

from __future__ import annotations

import hashlib

from hycloud_core import content
from hycloud_core.fs import FileSystem


def upload_large(fs: FileSystem, s3, bucket: str, data: bytes, path: str) -> str:
    """Upload `data` (one part) and commit it at `path`; dedup by proof when already stored."""
    digest = hashlib.sha256(data).digest()
    h = content.hash_from_parts([digest])
    state = fs.uploads.start(len(data), h, [content.b64(digest)])
    proof = None
    if state["dedup"]:
        ranges = state["challenge"]["ranges"]
        proof = content.possession_proof(state["challenge"]["nonce"], [data[o : o + n] for o, n in ranges])
    else:
        upload_id = fs.records.get_upload(fs.user, h)["upload_id"]
        s3.upload_part(
            Bucket=bucket,
            Key=content.object_key(h),
            UploadId=upload_id,
            PartNumber=1,
            Body=data,
            ChecksumSHA256=content.b64(digest),
        )
    fs.commit_large(path, h, proof)
    return h
