"""Share links: the owner creates, lists and revokes them; anyone holding one downloads the file.

`GET /v1/shared/{token}` is the one route that needs no API key (see context.PUBLIC_PREFIX): the
token is the credential. Every download is a redirect to a presigned S3 URL valid for a few
minutes. Large files are in S3 already; a small file is first copied from EFS to
`shares/<content hash>` (once per content, verified before reuse: `store/cached_copies.py`; a
lifecycle rule forgets it after a day). Answering the
bytes themselves would reach only clients whose Accept header names a binary media type (API
Gateway base64-encodes a binary body for anyone else, e.g. a browser), and costs Lambda time.
A coded file is made whole under the same prefix on its first download (routes/coded.py).
"""

from __future__ import annotations

import hashlib
from functools import cache
from typing import Annotated
from urllib.parse import quote

from answers import ShareInfo, ShareList, ok, replies
from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Body, Path
from aws_lambda_powertools.event_handler.router import APIGatewayRouter
from context import CONFIG, namespace, objects, records, s3, user
from models import NewShare, ShareToken
from services.coded_files import whole_object

from hycloud_core import content, paths
from hycloud_core.errors import ConflictError, NotFoundError
from hycloud_core.fs import Namespace
from hycloud_core.linkfile import LinkFile
from hycloud_core.store import cached_copies
from hycloud_core.store.shares import Share, Shares

router = APIGatewayRouter()
REDIRECT_TTL_S = 300


@cache
def shares() -> Shares:
    return Shares(records().table)


@router.post("/v1/shares", responses=replies(201, ShareInfo, 404, 409))
def create(body: Annotated[NewShare, Body()]):
    path = paths.normalize(body.path)
    ns = namespace(router)
    entry = ns.stat(path)
    if entry.type == "dir":
        raise ConflictError(f"{path} is a directory; share a file", code="is-a-directory")
    digest = entry.content_hash or hashlib.sha256(ns.read(path)).hexdigest()
    return ok(shares().create(user(router), path, digest, body.expires_in).to_dict(), 201)


@router.get("/v1/shares", responses=replies(200, ShareList))
def listing():
    return ok({"shares": [s.to_dict() for s in shares().list(user(router))]})


@router.delete("/v1/shares/<token>", responses=replies(200, ShareInfo, 404))
def revoke(token: Annotated[ShareToken, Path()]):
    return ok(shares().revoke(user(router), token).to_dict())


@router.get(
    "/v1/shared/<token>",
    responses={
        **replies(302, None, 404, 410, content={}),
        302: {"description": "Fetch the file from the Location: a presigned S3 URL valid for minutes."},
    },
)
def fetch(token: Annotated[ShareToken, Path()]):
    share = shares().get(token)
    ns = Namespace(CONFIG.namespaces_dir, share.user)
    try:
        entry = ns.stat(share.path)
    except NotFoundError:
        raise NotFoundError("the shared file was moved or deleted", code="shared-file-gone") from None
    if entry.type == "dir":
        raise NotFoundError("the shared file was replaced by a directory", code="shared-file-gone")
    if entry.storage == "large":
        key = _large_key(ns.read_link(share.path))
    else:
        key = cached_copies.put_bytes(s3(), CONFIG.bucket, ns.read(share.path))
    shares().count_download(share, entry.size)
    return Response(status_code=302, headers={"Location": _presigned(share, key)}, body="")


def _disposition(share: Share) -> str:
    return f"attachment; filename*=UTF-8''{quote(share.path.rsplit('/', 1)[1])}"


def _large_key(link: LinkFile) -> str:
    """A plain file's object (once in S3: a delta upload's version settles there after its
    acknowledgement); a coded file made whole once (from k blocks per chunk)."""
    if link.erasure:
        return whole_object(link)
    if link.settling:
        objects().await_settled(link.content_hash)
    return content.object_key(link.content_hash)


def _presigned(share: Share, key: str) -> str:
    return s3().generate_presigned_url(
        "get_object",
        ExpiresIn=REDIRECT_TTL_S,
        Params={
            "Bucket": CONFIG.bucket,
            "Key": key,
            "ResponseContentDisposition": _disposition(share),
        },
    )
