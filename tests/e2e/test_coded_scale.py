"""A coded upload of a file of several GiB starts in one bounded request, whatever its block count.

The start answers a presigned PUT for every block its instance does not hold; it used to ask
each instance about each block one after another (a 1 GiB file is 1,536 blocks), which passed
API Gateway's 29 s on a loaded machine (HTTP 502), and its answer outgrew Lambda's 6 MB for
files over about 5 GiB. The layouts here are the client's own format with random block hashes:
starting an upload stores nothing until blocks are sent and the commit proves them.
"""

from __future__ import annotations

import hashlib
import os
import time

import pytest

from hycloud.transfer.coded import fetch_plan, upload_coded
from hycloud.transfer.progress import Progress
from hycloud_core import content
from hycloud_core.codec.framing import HEADER_SIZE
from hycloud_core.codec.layout import URL_PAGE

pytestmark = [pytest.mark.e2e]
MiB, GiB = 1024 * 1024, 1024**3
CHUNK = 2 * MiB
START_LIMIT_S = 20.0  # well inside API Gateway's 29 s, on a loaded machine too
BUSY_TRIES = 4


def _layout(size: int, n: int = 3, k: int = 2) -> dict:
    chunks = []
    for offset in range(0, size, CHUNK):
        length = min(CHUNK, size - offset)
        block = HEADER_SIZE + -(-length // k)
        hashes = [os.urandom(32).hex() for _ in range(n)]
        chunks.append(
            {
                "length": length,
                "key": os.urandom(32).hex(),
                "blocks": [{"hash": h, "size": block} for h in hashes],
            }
        )
    return {"n": n, "k": k, "chunk_size": CHUNK, "chunks": chunks}


def _post_start(api, body: dict) -> tuple[float, object]:
    """POST the start as the client does: a 503 that says when to ask again (a page of blocks not
    checked in time on a loaded machine) is asked again; the seconds are the answered request's."""
    for _ in range(BUSY_TRIES):
        t0 = time.monotonic()
        answer = api.call("POST", "/v1/coded/uploads", json=body)
        if answer.status_code != 503 or "Retry-After" not in answer.headers:
            break
        time.sleep(float(answer.headers["Retry-After"]))
    return time.monotonic() - t0, answer


def _start(user, size: int, content_hash: str) -> tuple[float, object]:
    body = {
        "path": f"/scale/{size}.bin",
        "parents": True,  # the start checks the folder as the commit will
        "size": size,
        "content_hash": content_hash,
        "layout": _layout(size),
    }
    return _post_start(user.api(), body)


@pytest.fixture
def coded_user(alice):
    if alice.sdk().info().get("coded_threshold") is None:
        pytest.skip("erasure coding needs three instances (hycloud:regions)")
    return alice


@pytest.mark.slow
@pytest.mark.parametrize("gib", [8])
def test_a_coded_upload_of_gibs_starts_in_bounded_requests(coded_user, gib):
    size, content_hash = gib * GiB, os.urandom(32).hex()
    seconds, answer = _start(coded_user, size, content_hash)
    assert answer.status_code == 200, (answer.status_code, answer.text[:300])
    assert seconds < START_LIMIT_S, seconds
    started = answer.json()
    assert len(started["urls"]) == URL_PAGE and started["more"] == URL_PAGE  # the rest page by page
    homes = [
        (f"{ci}/{bi}", b)
        for ci, c in enumerate(started["layout"]["chunks"])
        for bi, b in enumerate(c["blocks"])
    ]
    assert len(homes) == 3 * size // CHUNK
    # Paging is the same at any size (the 1,023-block file below goes through every page): here the
    # first page and the last show it, each page asking every instance about each of its blocks.
    assert set(started["urls"]) == {key for key, _ in homes[:URL_PAGE]}  # none stored: a URL each
    last_at = (len(homes) - 1) // URL_PAGE * URL_PAGE
    last = coded_user.api().call(
        "POST",
        "/v1/coded/uploads/urls",
        json={"content_hash": content_hash, "blocks": [_wire(b) for _, b in homes[last_at:]]},
    )
    assert last.status_code == 200, last.text[:300]
    assert len(last.json()["urls"]) == len(homes) - last_at and all(last.json()["urls"])


def test_more_urls_need_an_open_upload_on_its_own_instances(coded_user):
    size, content_hash = 3 * CHUNK, os.urandom(32).hex()
    block = {"instance": "nowhere-1", "hash": "ab" * 32, "size": 1024}
    api = coded_user.api()
    closed = api.call(
        "POST", "/v1/coded/uploads/urls", json={"content_hash": content_hash, "blocks": [block]}
    )
    assert closed.status_code == 409 and closed.json()["error"]["code"] == "upload-required", closed.text
    _seconds, answer = _start(coded_user, size, content_hash)
    assert answer.status_code == 200 and "more" not in answer.json(), answer.text[:300]
    strange = api.call(
        "POST", "/v1/coded/uploads/urls", json={"content_hash": content_hash, "blocks": [block]}
    )
    assert strange.status_code == 400 and strange.json()["error"]["code"] == "bad-layout", strange.text
    too_many = api.call(
        "POST", "/v1/coded/uploads/urls", json={"content_hash": content_hash, "blocks": [block] * 1001}
    )
    assert too_many.status_code in (400, 422), too_many.text[:300]


def test_a_large_layout_commits_only_once_every_page_is_verified_in_order(coded_user):
    size, content_hash = 700 * CHUNK, os.urandom(32).hex()  # 2,100 blocks, none of them stored
    layout = _layout(size)
    body = {
        "path": "/scale/unverified.bin",
        "parents": True,
        "size": size,
        "content_hash": content_hash,
        "layout": layout,
    }
    api = coded_user.api()
    _seconds, answer = _post_start(api, body)
    assert answer.status_code == 200, (answer.status_code, answer.text[:300])
    started = answer.json()
    first = [b for c in started["layout"]["chunks"] for b in c["blocks"]][:URL_PAGE]

    def verify(at: int):
        return api.call(
            "POST",
            "/v1/coded/uploads/verify",
            json={"content_hash": content_hash, "first": at, "blocks": [_wire(b) for b in first]},
        )

    out_of_order = verify(URL_PAGE)
    assert out_of_order.status_code == 409 and out_of_order.json()["error"]["code"] == "verify-order"
    missing = verify(0)
    assert missing.status_code == 409 and missing.json()["error"]["code"] == "blocks-missing", missing.text
    commit = api.call("POST", "/v1/coded/commit", json={**body, "proof": "0" * 64})
    assert commit.status_code == 409 and commit.json()["error"]["code"] == "verify-required", commit.text
    assert api.call("GET", "/v1/stat", params={"path": "/scale/unverified.bin"}).status_code == 404


def _wire(block: dict) -> dict:
    return {"instance": block["instance"], "hash": block["hash"], "size": block["size"]}


def test_a_file_of_more_blocks_than_an_answer_holds_goes_up_and_down_whole(coded_user, tmp_path):
    """64 KiB chunks: 1,023 blocks in 22 MB, so both the upload's and the plan's URLs span pages."""
    src, back = tmp_path / "many.bin", tmp_path / "back.bin"
    src.write_bytes(os.urandom(341 * 64 * 1024 - 5))
    sdk, remote = coded_user.sdk(), f"/scale/{tmp_path.name}/many.bin"
    stored = upload_coded(sdk.http, src, remote, True, Progress(), {}, code=(3, 2), chunk_size=64 * 1024)
    assert stored["content_hash"] == content.hash_file(src)[0] and stored["coded"] == {"n": 3, "k": 2}
    plan = coded_user.api().call("GET", "/v1/plan", params={"path": remote}).json()
    assert len(plan["urls"]) == URL_PAGE and plan["more"] == URL_PAGE
    assert len(fetch_plan(sdk.http, remote)["urls"]) == 3 * 341
    sdk.get(remote, back)
    assert hashlib.sha256(back.read_bytes()).digest() == hashlib.sha256(src.read_bytes()).digest()
