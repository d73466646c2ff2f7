"""The Merkle exchange: the one-round diff (merkle/sketch.py), the level-by-level children of a
set of folders (merkle/exchange.py, for older clients), and the root.

Hashes are git-tree-like (merkle/hashing.py): a file's names its content only, a folder's its
children's names and hashes, so `merkle.tree_from_directory(folder)` gives a client the same
hashes wherever the folder is. Answers come from the hashes kept in DynamoDB
(store/merkle_records.py, read for the diff by store/sketch_reads.py), not from EFS.
"""

from __future__ import annotations

import time
from typing import Annotated

from answers import BINARY_BODY, BYTES, JSON, OCTET, ok, replies
from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Body, Query
from aws_lambda_powertools.event_handler.router import APIGatewayRouter
from bodies import raw_body
from botocore.exceptions import BotoCoreError, ClientError
from context import records, user
from models import Body as StrictBody
from pydantic import AfterValidator, Field, WithJsonSchema
from pydantic_core import PydanticCustomError

from hycloud_core import paths
from hycloud_core.errors import BadRequestError, HyCloudError
from hycloud_core.merkle import sketch
from hycloud_core.merkle.exchange import MAX_PATHS, VIRTUAL_ROOT
from hycloud_core.merkle.sketch import OutOfTime
from hycloud_core.observability import logger
from hycloud_core.store.merkle_records import MerkleRecords
from hycloud_core.store.sketch_reads import SketchReads

router = APIGatewayRouter()
RETRY_AFTER_S = 2
MAX_BELOW = 50_000  # subtree entries in one diff answer: ~2-3 MB, base64 under Lambda's 6 MB answer
# DynamoDB refusing work for now: the request was not served, and can be sent again as it is
OVERLOADED = frozenset(
    {
        "ProvisionedThroughputExceededException",
        "ThrottlingException",
        "RequestLimitExceeded",
        "InternalServerError",
        "ServiceUnavailable",
    }
)


def _exchange_path(value: str) -> str:
    """The empty path (the root's virtual parent) or a canonical path: replies are keyed by it as sent."""
    if value == VIRTUAL_ROOT:
        return value
    try:
        canonical = paths.normalize(value)
    except HyCloudError as err:
        raise PydanticCustomError(err.code, err.message) from None
    if canonical != value:
        raise PydanticCustomError("invalid-path", f"path must be canonical, e.g. {canonical!r}")
    return value


ExchangePath = Annotated[
    str,
    AfterValidator(_exchange_path),
    WithJsonSchema({"type": "string", "maxLength": paths.MAX_PATH_BYTES, "description": '"" or /a/b'}),
]


class ChildrenRequest(StrictBody):
    paths: Annotated[list[ExchangePath], Field(min_length=1, max_length=MAX_PATHS)]


SUMMARY = {
    "type": "object",
    "required": ["path", "kind", "hash", "mtime"],
    "properties": {
        "path": {"type": "string"},
        "kind": {"type": "string", "enum": ["dir", "file", "block", "tombstone"]},
        "hash": {"type": "string", "description": "hex; empty for a tombstone"},
        "mtime": {"type": "number", "description": "a tombstone's: when the deletion happened"},
        "children": {"type": "integer"},
        "index": {"type": "integer"},
    },
}
CHILDREN = {
    JSON: {
        "schema": {
            "type": "object",
            "description": "each requested path: its children's summaries (none for an unknown path); "
            "paths the request had no time for are left out, to be asked for again",
            "additionalProperties": {"type": "array", "items": SUMMARY},
        }
    }
}
ROOT = {
    JSON: {
        "schema": {
            "type": "object",
            "required": ["hash", "path"],
            "properties": {"hash": {"type": "string"}, "path": {"type": "string"}},
        }
    }
}


@router.post("/v1/merkle/children", responses=replies(200, None, 503, content=CHILDREN))
def children(body: Annotated[ChildrenRequest, Body()]):
    """One round of the exchange: `{path: [summary, ...]}`, "" answering with the root.

    A round over many folders whose hashes are stale may need more work than one request has
    time for: the answer then holds the paths done (and the hashes recomputed are kept), and
    when there are none, or DynamoDB is refusing work, a 503 with Retry-After says to ask again.
    """
    try:
        answered = _tree().answer(body.paths)
    except (ClientError, BotoCoreError) as err:
        if isinstance(err, ClientError) and err.response["Error"]["Code"] not in OVERLOADED:
            raise
        logger.warning("merkle exchange: the table is overloaded", extra={"error": str(err)})
        return _busy("the table is busy")
    return ok(answered) if answered else _busy("recomputing the folders' hashes")


@router.post(
    "/v1/merkle/diff", responses=replies(200, None, 400, 503, content=BYTES), openapi_extensions=BINARY_BODY
)
def diff(
    below: Annotated[
        int | None,
        Query(
            ge=0,
            le=MAX_BELOW,
            description="also the subtrees of folders only the cloud has, up to this many entries",
        ),
    ] = None,
):
    """The one-round exchange (hycloud_core/merkle/sketch.py, messages in wire.py): the body holds
    the client's folder hashes and file-hash prefixes; the answer, what differs. The cloud descends
    only into folders whose hashes differ, reading a level's folders side by side; older clients
    keep using `/v1/merkle/children`. With `below`, the answer (wire version 3) also holds the
    whole subtree of each folder only the cloud has (a rename's, a new folder's), up to that
    many entries. `x-hycloud-reads` (folders read), `x-hycloud-read-requests`
    (DynamoDB requests for them), `x-hycloud-read-rounds` (reads one after another) and
    `x-hycloud-server-ms` say what the answer took."""
    reads, started = SketchReads.within(_tree()), time.perf_counter()
    try:
        body = sketch.answer(raw_body(router), reads, below)
    except ValueError as err:
        raise BadRequestError(f"not an exchange message: {err}", code="bad-body") from None
    except OutOfTime:
        return _busy("recomputing the folders' hashes")
    except (ClientError, BotoCoreError) as err:
        if isinstance(err, ClientError) and err.response["Error"]["Code"] not in OVERLOADED:
            raise
        logger.warning("merkle diff: the table is overloaded", extra={"error": str(err)})
        return _busy("the table is busy")
    took = f"{(time.perf_counter() - started) * 1000:.1f}"
    headers = {
        "x-hycloud-reads": str(reads.queries),
        "x-hycloud-read-requests": str(reads.requests),
        "x-hycloud-read-rounds": str(reads.rounds),
        "x-hycloud-server-ms": took,
    }
    return Response(status_code=200, content_type=OCTET, body=body, headers=headers)


@router.get("/v1/merkle/root", responses=replies(200, None, content=ROOT))
def root():
    return ok({"hash": _tree().root_item()["hash"], "path": "/"})


def _busy(why: str) -> Response:
    body = {"error": {"code": "busy", "message": f"{why}; ask again in {RETRY_AFTER_S} s"}}
    return Response(
        status_code=503, content_type=JSON, body=body, headers={"Retry-After": str(RETRY_AFTER_S)}
    )


def _tree() -> MerkleRecords:
    return MerkleRecords(records().table, user(router))
