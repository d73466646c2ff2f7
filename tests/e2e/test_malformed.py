"""Malformed input against the deployed API: every one gets a 400 in the project's error shape.

Each request is sent raw (bytes on the wire, no client-side escaping) so the controller sees what
an attacker or a broken client would send: lone surrogates, NUL bytes, absurd nesting, numbers far
beyond any range. None may answer 5xx or leak a stack trace.
"""

from __future__ import annotations

import pytest
import requests

pytestmark = pytest.mark.e2e

SURROGATE_PATH = b'{"path": "/\\ud800"}'
TRACE_MARKERS = ("Traceback", 'File "', "Error:", "line ")


def _send(user, method: str, route: str, *, body: bytes | None = None, query: str = "") -> requests.Response:
    url = f"{user.deployment.api_url}{route}" + (f"?{query}" if query else "")
    headers = {"Authorization": f"Bearer {user.key}", "Content-Type": "application/json"}
    return requests.request(method, url, data=body, headers=headers, timeout=60)


def _assert_bad_request(response: requests.Response) -> dict:
    assert response.status_code == 400, (response.status_code, response.text[:500])
    error = response.json()["error"]
    assert set(error) == {"code", "message"} and error["code"] and error["message"]
    assert len(error["message"]) < 300 and not any(m in error["message"] for m in TRACE_MARKERS)
    return error


@pytest.mark.parametrize(
    "method,route,body",
    [
        ("POST", "/v1/dirs", SURROGATE_PATH),
        ("POST", "/v1/relay", SURROGATE_PATH),
        ("POST", "/v1/move", b'{"src": "/\\udfff", "dst": "/x"}'),
        ("POST", "/v1/copy", b'{"src": "/a", "dst": "/\\ud800x"}'),
        ("POST", "/v1/uploads/commit", b'{"path": "/\\ud800", "content_hash": "' + b"a" * 64 + b'"}'),
        ("POST", "/v1/delta/download", b'{"path": "/\\ud800", "base_hash": "' + b"a" * 64 + b'"}'),
        ("POST", "/v1/uploads", b'{"size": 1, "content_hash": "\\ud800", "part_digests": []}'),
        (
            "POST",
            "/v1/files/chunking",
            b'{"path": "/f", "content_hash": "' + b"a" * 64 + b'", "chunk_size": 1, "state": {"\\ud800": 1}}',
        ),
    ],
)
def test_lone_surrogate_in_json_is_a_400(alice, method, route, body):
    _assert_bad_request(_send(alice, method, route, body=body))


@pytest.mark.parametrize(
    "route,body",
    [
        ("/v1/copy", b"[" * 10_000),
        ("/v1/copy", b'{"src": ' + b"[" * 10_000 + b"]" * 10_000 + b', "dst": "/x"}'),
        ("/v1/dirs", b"{" * 50_000),
        (
            "/v1/files/chunking",
            b'{"path": "/f", "content_hash": "'
            + b"a" * 64
            + b'", "chunk_size": 4096, "state": '
            + b'{"a": ' * 100_000
            + b"1"
            + b"}" * 100_000
            + b"}",
        ),
    ],
)
def test_deeply_nested_json_is_a_400(alice, route, body):
    _assert_bad_request(_send(alice, "POST", route, body=body))


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"null",
        b"[]",
        b'"text"',
        b"{not json",
        b"\xff\xfe\x00",
        b'{"path": 7}',
        b'{"path": "/a\\u0000b"}',
        b'{"path": "/x", "parents": NaN}',
        b'{"path": "/x", "parents": "yes"}',
        b'{"path": "/x", "parents": 1e400}',
    ],
)
def test_malformed_bodies_are_a_400(alice, body):
    _assert_bad_request(_send(alice, "POST", "/v1/dirs", body=body))


@pytest.mark.parametrize(
    "method,route,query",
    [
        ("GET", "/v1/stat", "path=/a%00b"),
        ("GET", "/v1/dirs", "limit=99999999999999999999999999999999"),
        ("GET", "/v1/dirs", "limit=" + "9" * 5000),
        ("GET", "/v1/dirs", "cursor=%00"),
        ("GET", "/v1/dirs", "limit=0"),
        ("DELETE", "/v1/files", "path=/a%00"),
        ("DELETE", "/v1/dirs", "path=/d&recursive=maybe"),
        ("PUT", "/v1/delta/upload", "path=/f&base_hash=xyz&content_hash=" + "a" * 64),
        ("GET", "/v1/relay", "path=/f&wait=1e400"),
        ("GET", "/v1/relay", "path=/f&wait=nan"),
        ("GET", "/v1/relay", "path=/f&wait=-1"),
        ("GET", "/v1/relay/data", "path=/f&offset=99999999999999999999999999&length=1"),
        ("GET", "/v1/relay/data", "path=/f&offset=0&length=99999999999999999999999999"),
        ("GET", "/v1/delta/data", "id=dl-" + "a" * 40 + "-1&offset=99999999999999999999999999&length=1"),
        ("GET", "/v1/delta/jobs", "id=%00&wait=0"),
        ("GET", "/v1/usage", "source=%00"),
    ],
)
def test_malformed_query_strings_are_a_400(alice, method, route, query):
    """Raw non-ASCII bytes never reach the function (the gateway refuses them), so lone surrogates
    in parameters are covered by the unit tests; NUL bytes and out-of-range numbers do arrive."""
    _assert_bad_request(_send(alice, method, route, query=query))


def test_the_error_names_the_field(alice):
    error = _assert_bad_request(_send(alice, "POST", "/v1/copy", body=b'{"src": "/a", "dst": 7}'))
    assert error["code"] == "bad-body" and "dst" in error["message"]
    error = _assert_bad_request(_send(alice, "GET", "/v1/dirs", query="limit=5000"))
    assert error["code"] == "bad-parameter" and "limit" in error["message"]
    error = _assert_bad_request(_send(alice, "GET", "/v1/stat"))
    assert error["code"] == "missing-parameter" and "path" in error["message"]


def test_an_unauthenticated_malformed_request_is_refused_as_unauthenticated(deployment):
    """Validation runs before authentication in the resolver; the answer must not reveal that."""
    url = f"{deployment.api_url}/v1/copy"
    response = requests.post(
        url, data=b"[" * 10_000, headers={"Content-Type": "application/json"}, timeout=60
    )
    assert response.status_code == 401 and response.json()["error"]["code"] == "missing-key"
