"""A transfer whose presigned URLs expire before they are used asks the API for fresh ones for the
pieces not yet done, sends or fetches each piece once, and finishes; any other refusal still fails.

S3 here is a server on 127.0.0.1 (tests/unit/fake_s3.py) that refuses an expired URL with S3's own answer,
and the API is a fake that hands out URLs as the controller's routes do.
"""

from __future__ import annotations

import hashlib
import io
import os
from pathlib import Path

import pytest

from hycloud.transfer import coded, delta, download, renew, staging, upload
from hycloud.transfer.config import TransferConfig
from hycloud.transfer.progress import Progress
from hycloud_core import content
from hycloud_core.codec.layout import CodedLayout, placed
from hycloud_core.errors import ConflictError, HyCloudError
from hycloud_core.presigned import MAX_URL_TTL_S, expired
from tests.unit.fake_s3 import REQUEST_EXPIRED, TOKEN_EXPIRED, fake_s3

KiB = 1024
PART = 64 * KiB
REGIONS = ["us-east-1", "us-west-2", "eu-west-1"]
STALE = -1.0  # a URL's remaining life: expired before it is used


@pytest.fixture
def small_parts(monkeypatch):
    monkeypatch.setattr(content, "PART_SIZE", PART)


# --- recognising S3's answer -----------------------------------------------------------------
@pytest.mark.parametrize(
    ("status", "body", "is_expired"),
    [
        (*REQUEST_EXPIRED, True),
        (*TOKEN_EXPIRED, True),
        (403, b"<Error><Code>AccessDenied</Code><Message>Access Denied</Message></Error>", False),
        (403, b"<Error><Code>SignatureDoesNotMatch</Code><Message>expired?</Message></Error>", False),
        (400, b"<Error><Code>BadDigest</Code><Message>x</Message></Error>", False),
        (404, REQUEST_EXPIRED[1], False),
        (403, b"", False),
    ],
)
def test_only_s3s_expiry_answers_count_as_expired(status, body, is_expired):
    assert expired(status, body) is is_expired


def test_no_url_is_signed_for_longer_than_a_role_session_is_sure_to_last():
    from hycloud_core.fs import coded as fs_coded
    from hycloud_core.fs import operations, uploads

    assert MAX_URL_TTL_S == 900  # STS's shortest role session
    assert uploads.URL_TTL_S <= MAX_URL_TTL_S and fs_coded.URL_TTL_S <= MAX_URL_TTL_S
    assert operations.DOWNLOAD_URL_TTL_S <= MAX_URL_TTL_S


# --- multipart upload ------------------------------------------------------------------------
class PartUrls:
    """POST /v1/uploads/urls: fresh part URLs (or stale ones, `stale` times)."""

    def __init__(self, s3, stale: int = 0) -> None:
        self.s3, self.stale, self.asked = s3, stale, []

    def json(self, method: str, route: str, json: dict) -> dict:
        assert (method, route) == ("POST", "/v1/uploads/urls")
        self.asked.append(json["parts"])
        ttl = STALE if len(self.asked) <= self.stale else MAX_URL_TTL_S
        return {"urls": {str(n): self.s3.url(f"part-{n}", ttl) for n in json["parts"]}}


def _parts_state(s3, tmp_path: Path, parts: int, fresh: set[int]) -> tuple[Path, dict, list[bytes]]:
    path = tmp_path / "big"
    path.write_bytes(os.urandom(parts * PART - 123))
    content_hash, digests = content.hash_file(path)
    urls = {str(n): s3.url(f"part-{n}", MAX_URL_TTL_S if n in fresh else STALE) for n in range(1, parts + 1)}
    state = {
        "content_hash": content_hash,
        "parts_done": [],
        "missing": list(range(1, parts + 1)),
        "urls": urls,
    }
    return path, state, digests


def _sent(s3, parts: int) -> bytes:
    return b"".join(s3.objects[f"part-{n}"] for n in range(1, parts + 1))


def test_parts_whose_urls_expired_get_fresh_ones_and_finished_parts_are_not_sent_again(
    small_parts, tmp_path, monkeypatch
):
    one = TransferConfig(workers=1)  # in order: parts 1-2 sent before 3's URL is found expired
    with fake_s3() as s3:
        path, state, digests = _parts_state(s3, tmp_path, 6, fresh={1, 2})
        api = PartUrls(s3)
        upload._upload_parts(api, path, path.stat().st_size, state, digests, Progress(), one)
        assert _sent(s3, 6) == path.read_bytes()
        assert api.asked == [[3, 4, 5, 6]]  # one request, for the parts not yet sent
        assert all(s3.served[f"part-{n}"] == 1 for n in range(1, 7))
        assert dict(s3.refused) == {"part-3": 1}


@pytest.mark.parametrize("refusal", [REQUEST_EXPIRED, TOKEN_EXPIRED], ids=["request", "token"])
def test_many_workers_finding_their_urls_expired_ask_once(small_parts, tmp_path, refusal):
    with fake_s3(refusal) as s3:
        path, state, digests = _parts_state(s3, tmp_path, 12, fresh=set())
        api = PartUrls(s3)
        upload._upload_parts(api, path, path.stat().st_size, state, digests, Progress())
        assert _sent(s3, 12) == path.read_bytes()
        assert len(api.asked) == 1 and sorted(api.asked[0]) == list(range(1, 13))
        assert all(s3.served[f"part-{n}"] == 1 for n in range(1, 13))


def test_fresh_urls_that_keep_expiring_end_the_upload_with_a_clear_error(small_parts, tmp_path, monkeypatch):
    with fake_s3() as s3:
        path, state, digests = _parts_state(s3, tmp_path, 2, fresh=set())
        api = PartUrls(s3, stale=99)
        with pytest.raises(HyCloudError) as err:
            upload._upload_parts(
                api, path, path.stat().st_size, state, digests, Progress(), TransferConfig(workers=1)
            )
        assert err.value.code == "url-expired"
        assert len(api.asked) == renew.MAX_RENEWALS and not s3.objects


def test_a_refusal_that_is_not_an_expiry_fails_without_asking_again(small_parts, tmp_path):
    denied = (403, b"<Error><Code>SignatureDoesNotMatch</Code><Message>no</Message></Error>")
    with fake_s3(denied) as s3:
        path, state, digests = _parts_state(s3, tmp_path, 2, fresh=set())
        api = PartUrls(s3)
        with pytest.raises(HyCloudError) as err:
            upload._upload_parts(api, path, path.stat().st_size, state, digests, Progress())
        assert err.value.code == "part-upload-failed" and api.asked == []


def test_a_url_that_works_again_resets_the_count_of_renewals():
    """A long download renews its one URL every 15 minutes: only expiries in a row count."""
    fresh = iter(f"u{i}" for i in range(1, 100))
    book = renew.UrlBook({"": "u0"}, lambda _keys: {"": next(fresh)})
    url = "u0"
    for _ in range(renew.MAX_RENEWALS * 3):
        url = book.renew("", url)
        book.worked("")
    assert url == f"u{renew.MAX_RENEWALS * 3}"


# --- coded upload ----------------------------------------------------------------------------
class CodedApi:
    """The coded upload's routes: the blocks placed by the ring; a page's first URLs stale, the
    URLs asked again fresh, none for a block S3 holds; the commit checks every block is there."""

    def __init__(self, s3) -> None:
        self.s3 = s3
        self.pages: list[int] = []  # first block of each page asked for by /v1/coded/uploads/urls
        self.homes: list[dict] = []

    def _urls(self, blocks: list[dict], first: bool) -> list[str | None]:
        ttl = STALE if first else MAX_URL_TTL_S
        return [None if b["hash"] in self.s3.objects else self.s3.url(b["hash"], ttl) for b in blocks]

    def json(self, method: str, route: str, json: dict | None = None, **kw) -> dict:
        if route == "/v1/instances":
            return {"instances": [{"region": r} for r in REGIONS]}
        if route == "/v1/coded/uploads":
            layout = placed(CodedLayout.from_dict(json["layout"]), json["size"], REGIONS).to_dict()
            self.homes = [b for c in layout["chunks"] for b in c["blocks"]]
            page = self.homes[: coded.URL_PAGE]
            keys = [f"{c}/{b}" for c, ch in enumerate(layout["chunks"]) for b in range(len(ch["blocks"]))]
            urls = dict(zip(keys, self._urls(page, first=True), strict=False))
            more = {"more": coded.URL_PAGE} if len(self.homes) > coded.URL_PAGE else {}
            return {"layout": layout, "urls": {k: u for k, u in urls.items() if u}, **more,
                    "challenge": {"nonce": "n", "ranges": []}}  # fmt: skip
        if route == "/v1/coded/uploads/urls":
            at = self.homes.index(next(b for b in self.homes if b["hash"] == json["blocks"][0]["hash"]))
            assert at % coded.URL_PAGE == 0, "only whole pages, as the start placed them"
            assert [b["hash"] for b in json["blocks"]] == [
                b["hash"] for b in self.homes[at : at + coded.URL_PAGE]
            ]
            self.pages.append(at)
            return {"urls": self._urls(json["blocks"], first=self.pages.count(at) == 1 and at > 0)}
        if route == "/v1/coded/commit":
            for b in self.homes:
                assert hashlib.sha256(self.s3.objects[b["hash"]]).hexdigest() == b["hash"]
            return {"path": json["path"], "content_hash": json["content_hash"]}
        raise AssertionError(route)


def test_a_coded_upload_renews_the_page_of_an_expired_block_and_sends_each_block_once(tmp_path, monkeypatch):
    monkeypatch.setattr(coded, "URL_PAGE", 4)
    local = tmp_path / "f"
    local.write_bytes(os.urandom(3 * 1024 * KiB + 5))  # 4 chunks of 1 MiB, 12 blocks: 3 pages
    with fake_s3() as s3:
        api = CodedApi(s3)
        entry = coded.upload_coded(
            api,
            local,
            "/f",
            False,
            Progress(),
            {},
            (3, 2),
            1024 * KiB,
            False,
            config=TransferConfig(workers=2),
        )
        assert entry["content_hash"] == content.hash_file(local)[0]
        assert sorted(api.pages) == [0, 4, 4, 8, 8]  # the start's page once, the others twice
        assert all(s3.served[b["hash"]] == 1 for b in api.homes)  # each block sent once
        assert all(s3.refused[b["hash"]] <= 1 for b in api.homes)
        pages = [api.homes[at : at + 4] for at in (0, 4, 8)]
        assert all(any(s3.refused[b["hash"]] for b in page) for page in pages)  # every page expired


def test_a_block_stored_meanwhile_is_not_sent_after_its_url_expired(tmp_path):
    with fake_s3() as s3:
        api = CodedApi(s3)
        layout = {
            "chunks": [{"blocks": [{"instance": "i", "hash": f"{i:064x}", "size": 3} for i in range(3)]}]
        }
        api.homes = layout["chunks"][0]["blocks"]
        book = renew.UrlBook(
            {f"0/{i}": s3.url(f"{i:064x}", STALE) for i in range(3)},
            coded.put_renewal(api, {"layout": layout}, "c" * 64),
        )
        s3.objects[f"{1:064x}"] = b"one"  # another upload stored block 1 while its URL aged
        folder = tmp_path
        for i in range(3):
            (folder / f"{i:064x}").write_bytes(b"abc")
        sent = [coded._put_block(coded.new_session(), book, f"0/{i}", folder / f"{i:064x}") for i in range(3)]
        assert sent == [3, 0, 3] and api.pages == [0]
        assert s3.objects[f"{1:064x}"] == b"one" and s3.served[f"{1:064x}"] == 0


# --- coded download --------------------------------------------------------------------------
class PlanApi:
    """GET /v1/plan: a page of block URLs from `first`, stale the first time each page is asked."""

    def __init__(self, s3, data: bytes, layout: CodedLayout, content_hash: str) -> None:
        self.s3, self.data, self.layout, self.content_hash = s3, data, layout, content_hash
        self.asked: list[int] = []

    def json(self, method: str, route: str, params: dict, **kw) -> dict:
        if route == "/v1/measurements":
            return {}
        assert (method, route) == ("GET", "/v1/plan")
        first = int(params.get("first", 0))
        ttl = STALE if first not in self.asked else MAX_URL_TTL_S
        self.asked.append(first)
        homes = [
            (f"{c}/{b}", blk) for c, ch in enumerate(self.layout.chunks) for b, blk in enumerate(ch.blocks)
        ]
        page = homes[first : first + coded.URL_PAGE]
        more = first + coded.URL_PAGE
        return {
            "path": params["path"],
            "size": len(self.data),
            "content_hash": self.content_hash,
            "layout": self.layout.to_dict(),
            "urls": {key: self.s3.url(blk.hash, ttl) for key, blk in page},
            **({"more": more} if more < len(homes) else {}),
            "estimates": {r: 1e6 for r in REGIONS},
            "latencies_ms": {},
        }


@pytest.fixture
def coded_file(monkeypatch):
    monkeypatch.setattr(coded, "URL_PAGE", 4)
    from tests.unit.core.geo.test_coded_blocks import _coded

    data = os.urandom(5 * 1024 * KiB + 77)
    layout, blocks = _coded(data, REGIONS)
    with fake_s3() as s3:
        s3.objects.update(blocks)
        yield s3, data, layout, content.hash_bytes(data)


def test_a_multi_source_download_renews_the_pages_of_expired_block_urls(coded_file, tmp_path):
    s3, data, layout, content_hash = coded_file
    api = PlanApi(s3, data, layout, content_hash)
    local = tmp_path / "out"
    result = coded.download_coded(api, "/f", local, Progress(), report=False)
    assert local.read_bytes() == data and not result["unreachable"]
    pages = range(0, layout.block_count, coded.URL_PAGE)
    assert all(api.asked.count(p) <= 2 for p in pages)  # the plan's page, then one renewal at most
    assert all(n == 1 for n in s3.served.values())  # no block fetched twice


def test_a_reader_of_a_coded_file_renews_expired_block_urls(coded_file):
    s3, data, layout, content_hash = coded_file
    reader = coded.ChunkReader(PlanApi(s3, data, layout, content_hash), "/f")
    assert reader.read(0, len(data)) == data


def test_a_coded_file_replaced_meanwhile_fails_the_renewal_rather_than_mix_versions(coded_file):
    s3, data, layout, content_hash = coded_file
    api = PlanApi(s3, data, layout, content_hash)
    reader = coded.ChunkReader(api, "/f")
    api.content_hash = "f" * 64
    with pytest.raises(ConflictError):
        reader.read(0, 10)


# --- direct download, delta, staging ---------------------------------------------------------
def test_a_direct_download_renews_its_url_once_for_all_workers(small_parts, tmp_path):
    data = os.urandom(20 * PART + 9)
    with fake_s3() as s3:
        s3.objects["obj"] = data
        renewals = []

        def fresh() -> str:
            renewals.append(1)
            return s3.url("obj")

        info = {"url": s3.url("obj", STALE), "size": len(data), "content_hash": content.hash_bytes(data)}
        download.download_large(info, tmp_path / "out", Progress(), fresh, TransferConfig(part_size=PART))
        assert (tmp_path / "out").read_bytes() == data
        assert len(renewals) == 1 and s3.served["obj"] == 21  # each piece fetched once


def test_a_direct_download_without_a_way_to_renew_fails_on_an_expired_url(small_parts, tmp_path):
    with fake_s3() as s3:
        s3.objects["obj"] = b"x" * 10
        info = {"url": s3.url("obj", STALE), "size": 10, "content_hash": content.hash_bytes(b"x" * 10)}
        with pytest.raises(HyCloudError) as err:
            download.download_large(info, tmp_path / "out", Progress())
        assert err.value.code == "url-expired" and s3.refused["obj"] == 1  # not retried blindly


def test_a_delta_whose_url_expired_is_fetched_by_a_fresh_one():
    with fake_s3() as s3:
        s3.objects["delta"] = body = os.urandom(5000)

        class Jobs:
            asked = 0

            def json(self, method: str, route: str, params: dict) -> dict:
                assert (method, route, params) == ("GET", "/v1/delta/jobs", {"id": "j1"})
                Jobs.asked += 1
                return {"state": "ready", "result": {"delta_url": s3.url("delta"), "delta_size": 5000}}

        out = io.BytesIO()
        delta._fetch_delta(Jobs(), "j1", {"delta_url": s3.url("delta", STALE), "delta_size": 5000}, out)
        assert out.getvalue() == body and Jobs.asked == 1


def test_a_staging_put_whose_url_expired_is_sent_with_a_fresh_one():
    body = os.urandom(3000)
    with fake_s3() as s3:

        class Staging:
            asked: list[dict] = []

            def json(self, method: str, route: str, json: dict) -> dict:
                assert (method, route) == ("POST", "/v1/delta/staging")
                Staging.asked.append(json)
                ttl = STALE if len(Staging.asked) == 1 else MAX_URL_TTL_S
                return {"staged": json["sha256"], "url": s3.url("staged", ttl)}

        assert staging.stage(Staging(), io.BytesIO(body)) == hashlib.sha256(body).hexdigest()
        assert s3.objects["staged"] == body and s3.served["staged"] == 1 and len(Staging.asked) == 2
