"""Transfers complete though the presigned URLs they were handed expired before they were used
(issue 28, finding 7): the client asks the API again for the pieces not yet done, and sends or
fetches every piece once.

How the URLs expire, for real: the local cloud checks presigned URLs' signatures and expiry as S3
does (`S3_SKIP_SIGNATURE_VALIDATION=0`, infra/local/localcloud.py; tests/e2e/test_presigned.py),
but the cloud signs them for 15 minutes, too long to wait in a test, and a shorter life set in the
deployed functions would change what is tested. So the test stands between the SDK and the API and
replaces the URLs of the first answer that hands them out by stale twins: the very request the
controller signed (method, bucket, key, upload id, part number, signed checksum), signed again with
a date two minutes back and a one-minute life. S3 (LocalStack) refuses them with its own answer,
403 AccessDenied "Request has expired"; everything after, the client's renewals included, is the
deployed controller's, unchanged. A control checks that the same twin dated now is accepted, so
the refusal is the expiry and nothing else.

LocalStack answers a PUT it refuses without reading its body and keeps the connection open, so a
refused body larger than the connection's buffers leaves the client waiting for its timeout (seen
with 1 MiB; urllib3 reads an early answer when the server closes the connection instead). The PUTs
made stale here are small (64 KiB: the last part of a multipart upload, the blocks of small chunks,
a staged delta); GETs of any size.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from unittest import mock
from urllib.parse import parse_qs, parse_qsl, urlencode, urlsplit, urlunsplit

import pytest
import requests
from botocore.auth import S3SigV4QueryAuth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from hycloud import http as client_http
from hycloud.transfer.coded import upload_coded
from hycloud.transfer.progress import Progress
from hycloud_core import content
from hycloud_core.constants import MiB
from hycloud_core.presigned import MAX_URL_TTL_S, expired

pytestmark = pytest.mark.e2e
STALE_AGE_S, STALE_TTL_S = 120, 60  # signed two minutes ago for one minute: expired a minute ago
SMALL = 64 * 1024  # a refused PUT body LocalStack lets the client finish sending (see above)


def twin(url: str, checksum: str | None, age_s: float = STALE_AGE_S) -> str:
    """The same request as `url` (a PUT when it signs a checksum), signed `age_s` seconds ago for
    STALE_TTL_S by the test's own key."""
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    auth = {k: v for k, v in query if k.startswith("X-Amz-")}
    operation = [(k, v) for k, v in query if not k.startswith("X-Amz-")]
    bare = urlunsplit((parts.scheme, parts.netloc, parts.path, urlencode(operation), ""))
    method = "PUT" if "x-amz-checksum-sha256" in auth["X-Amz-SignedHeaders"].split(";") else "GET"
    request = AWSRequest(method=method, url=bare)
    if method == "PUT":
        request.headers["x-amz-checksum-sha256"] = checksum
    region = auth["X-Amz-Credential"].split("/")[2]
    signer = S3SigV4QueryAuth(Credentials("test", "test"), "s3", region, expires=STALE_TTL_S)
    when = datetime.now(UTC).replace(tzinfo=None) - timedelta(seconds=age_s)
    with mock.patch("botocore.auth.get_current_datetime", return_value=when):
        signer.add_auth(request)
    return request.url


def checksum_of(digests: list[bytes] | None = None) -> Callable[[str], str | None]:
    """The x-amz-checksum-sha256 a PUT URL was signed with: a part's digest, else the sha256 that
    names the object (a coded block, a staged delta)."""

    def checksum(url: str) -> str | None:
        parts = urlsplit(url)
        number = parse_qs(parts.query).get("partNumber")
        if number and digests:
            return content.b64(digests[int(number[0]) - 1])
        name = parts.path.rsplit("/", 1)[-1]
        return content.b64(bytes.fromhex(name)) if len(name) == 64 else None

    return checksum


class StaleFirstUrls:
    """The SDK's API calls as they are, except that the presigned URLs of the first answer from
    `routes` that carries any (but those under a key `spare` keeps) are replaced by stale twins."""

    def __init__(self, sdk, routes: set[str], checksum=None, spare=lambda key: False) -> None:
        self.routes, self.checksum, self.spare = routes, checksum or checksum_of(), spare
        self.calls: Counter[tuple[str, str]] = Counter()
        self.stale: list[str] = []  # the URLs handed to the client instead of the controller's
        self.real, sdk.http.request = sdk.http.request, self.request

    def request(self, method: str, route: str, **kwargs):
        response = self.real(method, route, **kwargs)
        self.calls[(method, route)] += 1
        if route in self.routes and not self.stale and "json" in response.headers.get("Content-Type", ""):
            body = response.json()
            if self._replace(body):
                response._content = json.dumps(body).encode()
        return response

    def _replace(self, node) -> bool:
        if isinstance(node, list):
            return any([self._replace(v) for v in node])
        if not isinstance(node, dict):
            return False
        found = False
        for key, value in node.items():
            if isinstance(value, str) and "X-Amz-Signature=" in value and not self.spare(key):
                node[key] = twin(value, self.checksum(value))
                self.stale.append(node[key])
                found = True
            else:
                found = self._replace(value) or found
        return found


class S3Log:
    """Every presigned request the client's sessions send, with S3's answer."""

    def __init__(self, monkeypatch) -> None:
        self.entries: list[dict] = []
        self.lock = threading.Lock()
        monkeypatch.setattr(client_http, "SESSION_HOOKS", [*client_http.SESSION_HOOKS, self._install])

    def _install(self, session: requests.Session) -> None:
        session.hooks["response"].append(self._record)

    def _record(self, response: requests.Response, *args, **kwargs) -> None:
        url = response.request.url
        if "X-Amz-Signature=" not in url:
            return
        parts = urlsplit(url)
        refused = response.content if response.status_code in (400, 403) else b""
        entry = {
            "method": response.request.method,
            "key": parts.path.rsplit("/", 1)[-1],
            "part": (parse_qs(parts.query).get("partNumber") or [None])[0],
            "range": response.request.headers.get("Range"),
            "status": response.status_code,
            "expired": expired(response.status_code, refused),
            "url": url,
        }
        with self.lock:
            self.entries.append(entry)

    def sent(self, **match) -> list[dict]:
        return [e for e in self.entries if all(e[k] == v for k, v in match.items())]


def _signature(url: str) -> str:
    return parse_qs(urlsplit(url).query)["X-Amz-Signature"][0]


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_the_cloud_signs_no_url_for_longer_than_a_role_session(alice, tmp_path):
    (tmp_path / "f").write_bytes(os.urandom(9 * MiB))
    alice.sdk().put(tmp_path / "f", "/ttl.bin")
    link = alice.api().call("GET", "/v1/files", params={"path": "/ttl.bin"}).json()
    assert parse_qs(urlsplit(link["url"]).query)["X-Amz-Expires"] == [str(MAX_URL_TTL_S)]


def test_a_long_upload_whose_later_part_urls_expired_completes_sending_each_part_once(
    alice, tmp_path, monkeypatch
):
    src = tmp_path / "big.bin"
    src.write_bytes(os.urandom(2 * content.PART_SIZE + SMALL))  # parts 1-2 of 8 MiB, a small part 3
    log, sdk = S3Log(monkeypatch), alice.sdk()
    # parts 1 and 2 went out while their URLs were fresh; part 3's had expired by its turn
    stale = StaleFirstUrls(sdk, {"/v1/uploads"}, checksum_of(content.hash_file(src)[1]), lambda k: k != "3")
    entry = sdk.put(src, "/expiry/upload.bin", parents=True)

    assert entry["content_hash"] == content.hash_file(src)[0] and len(stale.stale) == 1
    assert [e["status"] for e in log.sent(part="3")] == [403, 200]
    assert log.sent(part="3")[0]["expired"]  # refused by S3 as expired, not for anything else
    assert [e["status"] for e in log.sent(part="1")] == [200] == [e["status"] for e in log.sent(part="2")]
    assert stale.calls[("POST", "/v1/uploads/urls")] == 1  # one renewal, for the part not yet sent
    sdk.get("/expiry/upload.bin", tmp_path / "back.bin", via="direct")
    assert _digest(tmp_path / "back.bin") == _digest(src)


def test_a_direct_download_whose_url_expired_completes_fetching_each_piece_once(alice, tmp_path, monkeypatch):
    src = tmp_path / "src.bin"
    src.write_bytes(os.urandom(3 * content.PART_SIZE - 5))
    alice.sdk().put(src, "/expiry/direct.bin", parents=True)
    log, sdk = S3Log(monkeypatch), alice.sdk()
    stale = StaleFirstUrls(sdk, {"/v1/files"})
    sdk.get("/expiry/direct.bin", tmp_path / "out.bin", via="direct")

    assert _digest(tmp_path / "out.bin") == _digest(src)
    refused, served = log.sent(status=403), log.sent(status=206)
    assert refused and all(
        e["expired"] and _signature(e["url"]) == _signature(stale.stale[0]) for e in refused
    )
    assert sorted(e["range"] for e in served) == sorted({e["range"] for e in served})  # none twice
    assert len(served) == 3 and stale.calls[("GET", "/v1/files")] == 2  # the link, then one renewal
    # control: the same twin, dated now, is a good signature; the refusal was its age
    fresh = requests.get(twin(stale.stale[0], None, age_s=0), headers={"Range": "bytes=0-9"}, timeout=30)
    assert fresh.status_code == 206 and fresh.content == src.read_bytes()[:10]


def test_a_coded_file_moves_both_ways_after_its_first_urls_expired(instances, alice, tmp_path, monkeypatch):
    src = tmp_path / "coded.bin"
    src.write_bytes(os.urandom(5 * 2 * SMALL - 11))  # 5 chunks coded RS(3, 2): 15 small blocks
    log, sdk = S3Log(monkeypatch), alice.sdk()
    up = StaleFirstUrls(sdk, {"/v1/coded/uploads"})
    entry = upload_coded(sdk.http, src, "/expiry/coded.bin", True, Progress(), {}, chunk_size=2 * SMALL)
    assert entry["coded"] == {"n": 3, "k": 2} and len(up.stale) == 15
    puts = Counter(e["key"] for e in log.sent(method="PUT", status=200))
    assert sorted(puts.values()) == [1] * 15  # every block sent once, none again
    assert all(e["expired"] for e in log.sent(method="PUT", status=403)) and log.sent(
        method="PUT", status=403
    )
    assert up.calls[("POST", "/v1/coded/uploads/urls")] == 1  # one page renewed

    log.entries.clear()
    sdk = alice.sdk()
    down = StaleFirstUrls(sdk, {"/v1/plan"})
    sdk.get("/expiry/coded.bin", tmp_path / "out.bin")
    assert sdk.last_transfer["mode"] == "coded" and not sdk.last_transfer["unreachable"]
    assert _digest(tmp_path / "out.bin") == _digest(src)
    whole = Counter(e["key"] for e in log.sent(method="GET", status=200))
    assert whole and max(whole.values()) == 1  # no block fetched twice
    assert all(e["expired"] for e in log.sent(method="GET", status=403))
    assert down.calls[("GET", "/v1/plan")] == 2  # the plan, then one renewal of its page


def test_a_delta_moves_both_ways_after_its_urls_expired(alice, tmp_path, monkeypatch):
    from hycloud.transfer import delta as transfer_delta

    v1 = os.urandom(12 * MiB)
    v2 = os.urandom(5 * MiB) + v1[5 * MiB :]  # a version-aware delta of 5 MiB: over one API answer
    for name, data in (("v1", v1), ("v2", v2)):
        (tmp_path / name).write_bytes(data)
    sdk = alice.sdk()
    sdk.put(tmp_path / "v1", "/expiry/delta.bin", parents=True)
    sdk.put(tmp_path / "v2", "/expiry/delta.bin")  # v1 stays as a retained version: a delta base

    log, sdk = S3Log(monkeypatch), alice.sdk()
    down = StaleFirstUrls(sdk, {"/v1/delta/download", "/v1/delta/jobs"})
    sdk.get("/expiry/delta.bin", tmp_path / "out.bin", via="delta", base=tmp_path / "v1")
    assert (tmp_path / "out.bin").read_bytes() == v2
    assert sdk.last_transfer["mode"] == "delta" and sdk.last_transfer["kind"] == "version"
    assert [(e["status"], e["expired"]) for e in log.sent(method="GET")] == [(403, True), (200, False)]
    assert len(down.stale) == 1

    log.entries.clear()
    monkeypatch.setattr(transfer_delta, "MAX_DELTA_BODY", 1024)  # the delta goes up through S3
    v3 = v2[: 6 * MiB] + os.urandom(SMALL // 4) + v2[6 * MiB + SMALL // 4 :]  # a small staged delta
    (tmp_path / "v3").write_bytes(v3)
    sdk = alice.sdk()
    up = StaleFirstUrls(sdk, {"/v1/delta/staging"})
    entry = sdk.put(tmp_path / "v3", "/expiry/delta.bin", base=tmp_path / "v2", force_delta=True)
    assert entry["mode"] == "delta" and entry["content_hash"] == content.hash_bytes(v3)
    assert [(e["status"], e["expired"]) for e in log.sent(method="PUT")] == [(403, True), (200, False)]
    assert up.calls[("POST", "/v1/delta/staging")] == 2  # the staging URL, then a fresh one
