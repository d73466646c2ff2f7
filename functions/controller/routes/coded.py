"""Erasure-coded large files across instances: upload, commit, download plan, measurements (docs/GEO.md)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from annotated_types import Ge, Le
from answers import Entry, ok, replies
from aws_lambda_powertools.event_handler.openapi.params import Body as BodyParam
from aws_lambda_powertools.event_handler.openapi.params import Query
from aws_lambda_powertools.event_handler.router import APIGatewayRouter
from context import CONFIG, filesystem, records, s3, s3_in, user
from models import Body, ByteCount, ContentHash, FileMode, FileTime, Text, UserPath
from preconditions import IfMatch, IfNoneMatch, expected_version
from pydantic import BaseModel, Field
from services import coded_files, repair_jobs

from hycloud_core import paths
from hycloud_core.codec.layout import MAX_CHUNKS, URL_PAGE, Block, Chunk, CodedLayout
from hycloud_core.errors import BadRequestError, NotFoundError
from hycloud_core.fs.coded import CodedFiles
from hycloud_core.instances import on_ring
from hycloud_core.store.measurements import Measurements, Sample

router = APIGatewayRouter()
Hash = Annotated[str, Field(pattern="^[0-9a-f]{64}$")]
Small = Annotated[int, Ge(1), Le(255)]


class BlockIn(Body):
    hash: Hash
    size: Annotated[int, Ge(1), Le(2**33)]


class ChunkIn(Body):
    length: Annotated[int, Ge(1), Le(2**32 - 1)]
    key: Hash
    blocks: Annotated[list[BlockIn], Field(min_length=1, max_length=255)]


class LayoutIn(Body):
    n: Small
    k: Small
    chunk_size: Annotated[int, Ge(1), Le(2**32 - 1)]
    chunks: Annotated[list[ChunkIn], Field(min_length=1, max_length=MAX_CHUNKS)]


class CodedUpload(Body):
    path: UserPath
    size: ByteCount
    content_hash: ContentHash
    layout: LayoutIn
    parents: bool | None = None


class PlacedBlockIn(BlockIn):
    instance: Annotated[Text, Field(min_length=1, max_length=64)]


class MoreUrlsIn(Body):
    content_hash: ContentHash
    blocks: Annotated[list[PlacedBlockIn], Field(min_length=1, max_length=URL_PAGE)]


class VerifyIn(MoreUrlsIn):
    first: Annotated[int, Ge(0), Le(MAX_CHUNKS * 255)] = Field(description="index of the page's first block")


class Verified(BaseModel):
    verified: int = Field(description="blocks verified so far, in block order: where the next page starts")


class BlockUrls(BaseModel):
    urls: list[str | None] = Field(description="a presigned PUT per block asked for; null where it is stored")


class CodedCommit(CodedUpload):
    proof: Hash | None = Field(default=None, description="answer to the upload's challenge")
    mtime: FileTime | None = None
    mode: FileMode | None = None
    sha256: ContentHash | None = None  # the whole file's plain sha256, kept for `sha256sum` checks


class SampleIn(Body):
    instance: Annotated[Text, Field(min_length=1, max_length=64)]
    bytes: Annotated[int, Ge(1), Le(2**50)]
    seconds: Annotated[float, Ge(1e-6), Le(86_400)]
    rtt_ms: Annotated[float, Ge(0), Le(600_000)] | None = None
    kind: Literal["download", "upload", "probe"] = "download"


class MeasurementsIn(Body):
    samples: Annotated[list[SampleIn], Field(min_length=1, max_length=64)]


class CodedPlan(BaseModel):
    layout: dict[str, Any]
    urls: dict[str, str] = Field(description='presigned PUT (upload) or GET (plan) per "chunk/block"')
    challenge: dict[str, Any] | None = Field(
        default=None,
        description="upload: nonce and [block hash, offset, length] ranges the commit's proof hashes",
    )
    more: int | None = Field(
        default=None,
        description=f"the blocks' URLs come {URL_PAGE} to an answer: where the next page starts, "
        "in block order (upload: POST /v1/coded/uploads/urls; plan: GET /v1/plan?first=)",
    )


class Estimates(BaseModel):
    estimates: dict[str, float | None] = Field(
        description="bytes/s per instance: harmonic mean of the last K"
    )
    measured_by: dict[str, str | None] = Field(
        default_factory=dict, description='what each estimate comes from: "download", "upload", "probe"'
    )
    latencies_ms: dict[str, float]
    service_instances: list[str]
    optimal: str | None


class DownloadPlan(CodedPlan, Estimates):
    path: str
    size: int
    content_hash: str


def _coded() -> CodedFiles:
    return CodedFiles(filesystem(router), on_ring(records().table), s3_in)


def _layout(body: LayoutIn) -> CodedLayout:
    chunks = [Chunk(c.length, c.key, [Block(b.hash, b.size) for b in c.blocks]) for c in body.chunks]
    return CodedLayout(body.n, body.k, body.chunk_size, chunks)


def _placed_blocks(body: MoreUrlsIn) -> list[Block]:
    return [Block(b.hash, b.size, b.instance) for b in body.blocks]


@router.post("/v1/coded/uploads", responses=replies(200, CodedPlan, 403, 404, 409, 503))
def start(body: Annotated[CodedUpload, BodyParam()]):
    """Place the blocks and hand out their URLs, once the commit at `path` could succeed."""
    coded = _coded()
    coded.fs.check_upload(body.path, body.size, bool(body.parents))
    return ok(coded.start(body.size, _layout(body.layout), body.content_hash))


@router.post("/v1/coded/uploads/urls", responses=replies(200, BlockUrls, 409, 503))
def more_urls(body: Annotated[MoreUrlsIn, BodyParam()]):
    """PUT URLs for the blocks past the first page of an open upload, as `start` placed them."""
    return ok({"urls": _coded().more_urls(body.content_hash, _placed_blocks(body))})


@router.post("/v1/coded/uploads/verify", responses=replies(200, Verified, 409))
def verify(body: Annotated[VerifyIn, BodyParam()]):
    """Check a page of an open upload's blocks in place (a commit of more blocks than one request
    can check needs every page verified first)."""
    return ok({"verified": _coded().verify(body.content_hash, body.first, _placed_blocks(body))})


@router.post("/v1/coded/commit", responses=replies(201, Entry, 404, 409))
def commit(
    body: Annotated[CodedCommit, BodyParam()], if_match: IfMatch = None, if_none_match: IfNoneMatch = None
):
    entry = _coded().commit(
        body.path,
        body.content_hash,
        body.size,
        _layout(body.layout),
        parents=bool(body.parents),
        expect=expected_version(if_match, if_none_match),
        mtime=body.mtime,
        mode=body.mode,
        proof=body.proof,
        sha256=body.sha256,
    )
    return ok(entry.to_dict(), 201)


@router.get("/v1/plan", responses=replies(200, DownloadPlan, 404))
def plan(path: Annotated[UserPath, Query()], first: Annotated[int, Query(ge=0, le=2**31)] = 0):
    """Where every block of a coded file is, with the caller's estimates for the planner; the URLs
    of the page of blocks from `first`."""
    coded = _coded()
    link, layout = coded.layout(path)
    view = Measurements(records().table, user(router)).view(coded.regions)
    more = first + URL_PAGE
    return ok(
        {
            "path": path,
            "size": link.size,
            "content_hash": link.content_hash,
            "layout": layout.to_dict(),
            "urls": coded.download_urls(layout, first),
            **({"more": more} if more < layout.block_count else {}),
            **view,
        }
    )


@router.post("/v1/measurements", responses=replies(200, Estimates))
def measurements(body: Annotated[MeasurementsIn, BodyParam()]):
    """A transfer's bytes and seconds per instance; answers the updated estimates."""
    regions = [i.region for i in on_ring(records().table)]
    unknown = sorted({s.instance for s in body.samples} - set(regions))
    if unknown:
        raise BadRequestError(f"no such instance: {unknown[0]}", code="unknown-instance")
    store = Measurements(records().table, user(router))
    store.record(Sample(s.instance, s.bytes, s.seconds, s.rtt_ms, s.kind) for s in body.samples)
    return ok(store.view(regions))


class RepairIn(Body):
    region: Annotated[Text, Field(min_length=1, max_length=64)]


class RepairJob(BaseModel):
    job: str
    state: str = Field(description="queued, running, succeeded or failed")
    queue: dict[str, Any] | None = Field(None, description="while queued: position, estimated_start_s")
    result: dict[str, Any] | None = None


JOB_NAME = r"^[0-9a-f]{32}$"


@router.post("/v1/coded/repair", responses=replies(202, RepairJob, 409))
def repair(body: Annotated[RepairIn, BodyParam()]):
    """Rebuild the caller's coded blocks on one instance from the others: a Step Functions job
    queued as background work (hycloud_core/jobs/coded.py), started in FOP order."""
    if body.region not in {i.region for i in on_ring(records().table)}:
        raise BadRequestError(f"no such instance: {body.region}", code="unknown-instance")
    return ok(repair_jobs.queue_repair(user(router), body.region), 202)


@router.get("/v1/coded/repair", responses=replies(200, RepairJob, 404, 409))
def repair_status(job: Annotated[str, Query(pattern=JOB_NAME)]):
    answer = repair_jobs.state_of(job, user(router))
    if answer is None:
        raise NotFoundError("no such repair job", code="no-such-job")
    return ok(answer)


WHOLE_URL_TTL_S = 300


class WholeFile(BaseModel):
    path: str
    size: int
    content_hash: str
    url: str = Field(description="presigned GET of the file made whole, valid for minutes")


@router.get("/v1/coded/whole", responses=replies(200, WholeFile, 404, 409, 413))
def whole(path: Annotated[UserPath, Query()]):
    """One URL for a coded file (the web app's download): what a plain file's link gives."""
    link, _ = _coded().layout(path)
    url = s3().generate_presigned_url(
        "get_object",
        ExpiresIn=WHOLE_URL_TTL_S,
        Params={"Bucket": CONFIG.bucket, "Key": coded_files.whole_object(link)},
    )
    size, digest = link.size, link.content_hash
    return ok({"path": paths.normalize(path), "size": size, "content_hash": digest, "url": url})
