"""The reach function carries a call exactly as its caller signed it, and nothing else.

A real boto3 client (signing with its own credentials) is routed through the carrier; the carrier's
Lambda invoke is replaced by a direct call of the reach handler, which sends to a small HTTP server
on 127.0.0.1 standing in for another region's endpoint.
"""

from __future__ import annotations

import http.server
import json
import threading
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from hycloud_core import reach
from tests.conftest import load_function

OTHER = OTHER_REGION = "eu-west-1"


class _Endpoint(http.server.BaseHTTPRequestHandler):
    seen: list[dict[str, Any]] = []
    objects: dict[str, bytes] = {}

    def _answer(self, body: bytes | None) -> None:
        if body is None:
            self.send_response(404)
            self.send_header("Content-Type", "application/xml")
            payload = b"<Error><Code>NoSuchKey</Code><Message>gone</Message></Error>"
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(payload)
            return
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("ETag", '"abc"')
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def do_GET(self) -> None:  # noqa: N802
        self._record(b"")
        if self.path.endswith("/cut-short"):  # a body shorter than its length: unreadable whole
            self.send_response(200)
            self.send_header("Content-Length", "1000")
            self.end_headers()
            self.wfile.write(b"x" * 10)
            self.close_connection = True
            return
        self._answer(self.objects.get(self.path))

    do_HEAD = do_GET  # noqa: N815

    def do_PUT(self) -> None:  # noqa: N802
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self._record(body)
        self.objects[self.path] = body
        self._answer(b"")

    def _record(self, body: bytes) -> None:
        self.seen.append(
            {"method": self.command, "path": self.path, "headers": dict(self.headers), "body": body}
        )

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def endpoint(monkeypatch):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Endpoint)
    server.timeout = 5
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    _Endpoint.seen.clear()
    _Endpoint.objects.clear()
    for name in ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3"):
        monkeypatch.setenv(name, url)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret")
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_S3_FORCE_PATH_STYLE", "1")
    yield url
    server.shutdown()
    server.server_close()
    thread.join(5)


@pytest.fixture
def carried(monkeypatch, endpoint):
    """Clients routed through the carrier, whose invoke runs the reach handler in process."""
    handler = load_function("reach")
    calls: list[dict] = []

    class _Lambda:
        def invoke(self, FunctionName: str, Payload: str) -> dict:  # noqa: N803
            event = json.loads(Payload)
            calls.append({"function": FunctionName, **event})
            answer = handler.handler(event, None)
            return {"Payload": _Body(json.dumps(answer).encode())}

    monkeypatch.setenv(reach.ENV_REACH, "app-Reach")
    monkeypatch.setattr(reach, "_lambda", lambda: _Lambda())
    return calls


class _Body:
    def __init__(self, data: bytes) -> None:
        self.data = data

    def read(self) -> bytes:
        return self.data


def test_a_call_to_another_region_is_carried_as_signed(carried):
    s3 = reach.client("s3", OTHER)
    assert getattr(s3, reach.MARKER) == "app-Reach"
    s3.put_object(Bucket="blocks-eu", Key="blocks/b1", Body=b"block bytes")
    got = s3.get_object(Bucket="blocks-eu", Key="blocks/b1")["Body"].read()
    assert got == b"block bytes"
    put = _Endpoint.seen[0]
    assert put["method"] == "PUT" and put["body"] == b"block bytes"
    # the signature the endpoint checks is the caller's, for the caller's region
    assert f"/{OTHER}/s3/aws4_request" in put["headers"]["Authorization"]
    assert put["headers"]["Authorization"] == carried[0]["headers"]["Authorization"]
    assert [c["function"] for c in carried] == ["app-Reach", "app-Reach"]


def test_an_error_answer_reaches_the_caller_as_aws_gave_it(carried):
    s3 = reach.client("s3", OTHER)
    with pytest.raises(ClientError) as err:
        s3.get_object(Bucket="blocks-eu", Key="blocks/none")
    assert err.value.response["Error"]["Code"] == "NoSuchKey"
    with pytest.raises(ClientError) as err:
        s3.head_object(Bucket="blocks-eu", Key="blocks/none")
    assert err.value.response["ResponseMetadata"]["HTTPStatusCode"] == 404


def test_own_region_endpoints_are_used_directly_but_step_functions_is_carried(carried):
    assert not hasattr(reach.client("s3"), reach.MARKER)
    assert not hasattr(reach.client("dynamodb", "us-east-1"), reach.MARKER)
    assert hasattr(reach.client("stepfunctions"), reach.MARKER)  # no Step Functions endpoint in the VPC
    assert hasattr(reach.resource("dynamodb", OTHER).meta.client, reach.MARKER)


def test_outside_a_vpc_nothing_is_carried(monkeypatch):
    monkeypatch.delenv(reach.ENV_REACH, raising=False)
    assert not hasattr(reach.client("s3", OTHER), reach.MARKER)


def test_a_body_too_large_for_a_lambda_payload_is_refused_before_sending(carried):
    s3 = reach.client("s3", OTHER)
    with pytest.raises(reach.ReachError, match="cannot cross regions"):
        s3.put_object(Bucket="blocks-eu", Key="blocks/big", Body=b"x" * (reach.MAX_BODY + 1))
    assert _Endpoint.seen == [] and carried == []


def test_the_reach_function_sends_only_to_the_apps_aws_endpoints(monkeypatch):
    handler = load_function("reach")
    for name in [n for n in list(__import__("os").environ) if n.startswith("AWS_ENDPOINT_URL")]:
        monkeypatch.delenv(name)
    assert handler.allowed("https://blocks.s3.eu-west-1.amazonaws.com/blocks/x")
    assert handler.allowed("https://s3.us-west-2.amazonaws.com/b/k")
    assert handler.allowed("https://dynamodb.us-west-2.amazonaws.com/")
    assert handler.allowed("https://states.eu-west-1.amazonaws.com/")
    assert handler.allowed("https://lambda.us-west-2.amazonaws.com/2015-03-31/functions/f/invocations")
    assert not handler.allowed("http://s3.us-west-2.amazonaws.com/b/k")  # not TLS
    assert not handler.allowed("https://ec2.us-west-2.amazonaws.com/")  # not a service the app uses
    assert not handler.allowed("https://s3.us-west-2.amazonaws.com.evil.example/")
    assert not handler.allowed("http://169.254.169.254/latest/meta-data/")
    answer = handler.handler({"method": "GET", "url": "http://169.254.169.254/latest/", "headers": {}}, None)
    assert "error" in answer
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:4566")
    assert handler.allowed("http://127.0.0.1:4566/bucket/key")  # the local cloud's endpoint


def test_plain_clients_are_untouched_by_the_module(monkeypatch):
    monkeypatch.setenv(reach.ENV_REACH, "app-Reach")
    assert not hasattr(boto3.client("s3", region_name=OTHER), reach.MARKER)


def test_many_heads_of_another_regions_blocks_are_one_call_of_the_reach_function(carried):
    from hycloud_core.fs.blocks import ABSENT, BlockStore
    from hycloud_core.fs.blocks import OTHER as NOT_THE_BLOCK
    from hycloud_core.instances import Instance

    store = BlockStore(
        [Instance(OTHER_REGION, "blocks-eu", "", "")], lambda region: reach.client("s3", region)
    )
    _Endpoint.objects["/blocks-eu/blocks/" + "a" * 64] = b"not the block"
    asked = [("a" * 64, 13), ("b" * 64, 10), ("c" * 64, 10)]
    assert store.carried(OTHER_REGION)
    assert store.states(OTHER_REGION, asked) == [NOT_THE_BLOCK, ABSENT, ABSENT]
    assert len(carried) == 1 and len(carried[0]["batch"]) == 3  # one invocation for the three HEADs
    assert [s["method"] for s in _Endpoint.seen] == ["HEAD"] * 3
    assert all(s["headers"]["x-amz-checksum-mode"] == "ENABLED" for s in _Endpoint.seen)


def test_a_dropped_connection_is_a_connection_error_botocore_retries(carried, monkeypatch):
    from botocore.config import Config
    from botocore.exceptions import EndpointConnectionError

    closed = __import__("socket").socket()
    closed.bind(("127.0.0.1", 0))
    port = closed.getsockname()[1]
    closed.close()  # nothing listens there
    for name in ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3"):
        monkeypatch.setenv(name, f"http://127.0.0.1:{port}")
    s3 = reach.client("s3", OTHER, config=Config(retries={"total_max_attempts": 2, "mode": "standard"}))
    with pytest.raises(EndpointConnectionError):
        s3.head_object(Bucket="blocks-eu", Key="blocks/x")
    assert len(carried) == 2  # botocore sent it again, as after any dropped connection


def test_a_block_whose_body_is_cut_short_is_no_source_not_a_failure(carried):
    from botocore.exceptions import IncompleteReadError

    from hycloud_core.fs.blocks import BlockStore
    from hycloud_core.instances import Instance

    store = BlockStore(
        [Instance(OTHER_REGION, "blocks-eu", "", "")], lambda region: reach.client("s3", region)
    )
    _Endpoint.objects["/blocks-eu/blocks/" + "a" * 64] = b"whole"
    got = store.get_many(OTHER_REGION, [("a" * 64, 5), ("cut-short", 1000)])
    assert got == [b"whole", None]
    with pytest.raises(IncompleteReadError):
        reach.client("s3", OTHER_REGION).get_object(Bucket="blocks-eu", Key="cut-short")
