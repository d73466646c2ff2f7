"""A coded file made whole where a plain large file would be read: one S3 object or one cache file.

Share links and the web app hand out one presigned URL, and delta jobs read their base version
from the relay cache; a coded file has neither, so the controller decodes it from k verified
blocks per chunk (`reassemble.py`) as it streams: S3 gets it as a multipart upload completed
only when the content hash is right, the cache as a temporary file published only then.
"""

from __future__ import annotations

import os
import tempfile
from typing import Any

from ..codec.layout import CodedLayout
from ..errors import ConflictError, PayloadTooLargeError
from ..fs.blocks import BlockStore
from ..fs.relay_cache import RelayCache
from ..store.multipart import ObjectWriter
from .reassemble import reassemble

# What one controller request decodes within API Gateway's 29 s (a few hundred MB/s in-region),
# unless the deployment says otherwise (InstanceConfig.coded_inline_bytes); a larger coded file is
# refused with a clear error rather than a timeout.
MAX_INLINE_BYTES = 512 * 1024 * 1024


def fits_inline(erasure: dict[str, Any], limit: int = MAX_INLINE_BYTES) -> bool:
    """Whether one request may make this layout's file whole."""
    return _fits(CodedLayout.from_dict(erasure), limit)


def _fits(layout: CodedLayout, limit: int) -> bool:
    return sum(c.length for c in layout.chunks) <= limit


def _checked_size(layout: CodedLayout, limit: int) -> None:
    if not _fits(layout, limit):
        raise PayloadTooLargeError(
            f"a coded file over {limit // 2**20} MiB cannot be made whole in one request; "
            "download it with the client",
            code="coded-too-large",
        )


def _verified(got: str, content_hash: str) -> None:
    if got != content_hash:
        raise ConflictError("the blocks do not make the file's content", code="blocks-lost")


def to_object(
    erasure: dict[str, Any],
    content_hash: str,
    store: BlockStore,
    own: str,
    s3: Any,
    bucket: str,
    key: str,
    limit: int = MAX_INLINE_BYTES,
) -> None:
    """Decode the file into `bucket/key`, which exists afterwards only if its hash is right."""
    layout = CodedLayout.from_dict(erasure)
    _checked_size(layout, limit)
    out = ObjectWriter(s3, bucket, key)
    try:
        got, _ = reassemble(layout, store, own, out)
        _verified(got, content_hash)
        out.complete()
    except BaseException:
        out.abort()
        raise


def to_cache(
    erasure: dict[str, Any],
    content_hash: str,
    store: BlockStore,
    own: str,
    cache: RelayCache,
    name: str,
    limit: int = MAX_INLINE_BYTES,
) -> None:
    """Decode the file into the relay cache as `name` (what a delta job reads as its base)."""
    layout = CodedLayout.from_dict(erasure)
    _checked_size(layout, limit)
    fd, tmp = tempfile.mkstemp(prefix=".hc-tmp-", dir=cache.dir)
    try:
        with os.fdopen(fd, "wb") as out:
            got, _ = reassemble(layout, store, own, out)
        _verified(got, content_hash)
        cache.publish(name, tmp, got)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
