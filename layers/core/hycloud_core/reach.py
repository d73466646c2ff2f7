"""AWS calls the VPC's endpoints cannot carry, from functions inside it, carried by the reach function.

The EFS-mounted functions run in isolated subnets: their endpoints reach S3, DynamoDB (gateway
endpoints, free) and Lambda (an interface endpoint, $7.30 a month per zone) in their own region
only. A NAT gateway to go further would cost about $33 a month per zone per region, idle, and a
Step Functions endpoint as much as the Lambda one. So a call to another region, or to Step
Functions, is built and signed here, with
this function's own credentials, and handed whole to the reach function (`functions/reach`,
outside the VPC, invoked through the VPC's Lambda endpoint), which sends it as it is and returns
the answer. The reach function holds no rights of its own: AWS judges every call by the role that
signed it, and a signature cannot be moved to another request.

A call goes this way only when `HYCLOUD_REACH_FUNCTION` is set (the stack sets it on every
function in a VPC) and it is not to IN_REGION services of the function's own region. Both ways of a call carry at most
MAX_BODY bytes (Lambda's 6 MB payload, base64): coded blocks are at most that
(codec/layout.py MAX_BLOCK_PAYLOAD); whole objects cross regions as S3 copies, which carry no body.
"""

from __future__ import annotations

import base64
import io
import json
import os
import threading
from collections.abc import Iterator, Sequence
from functools import cache
from typing import Any, cast

import boto3
from botocore.awsrequest import AWSPreparedRequest, AWSResponse
from botocore.config import Config
from botocore.exceptions import BotoCoreError, EndpointConnectionError, IncompleteReadError

from .constants import KiB, MiB

ENV_REACH = "HYCLOUD_REACH_FUNCTION"
MAX_BODY = 4 * MiB + 256 * KiB  # base64 of it and the envelope stay under Lambda's 6 MB payload
IN_REGION = ("s3", "dynamodb", "lambda")  # what the VPC's endpoints reach (constructs/efs_volume.py)
MARKER = "_hycloud_reach"  # on a client whose calls the reach function carries (the local cloud reads it)
BATCH = 200  # signed requests one call of the reach function sends (in parallel, headers-only answers)
_local = threading.local()


class ReachError(BotoCoreError):
    fmt = "{message}"


def _own_region() -> str:
    return os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION", "")


def client(service: str, region: str | None = None, config: Config | None = None, carry: bool = False) -> Any:
    """A boto3 client of `region` (None: this one), carried by the reach function when it must be,
    or always with `carry` (an S3 copy into this region's bucket from another region's)."""
    # the service is named at run time: the stubs type only literal names
    made = boto3.client(service, region_name=region, config=config)  # type: ignore[call-overload]
    return route(made, carry)


def resource(service: str, region: str | None = None) -> Any:
    made = boto3.resource(service, region_name=region)  # type: ignore[call-overload]  # as client()
    route(made.meta.client)
    return made


def carried(made: Any) -> bool:
    return bool(getattr(made, MARKER, None))


def route(made: Any, carry: bool = False) -> Any:
    function = os.environ.get(ENV_REACH)
    endpoint = made.meta.region_name == _own_region() and made.meta.service_model.endpoint_prefix in IN_REGION
    if function and (carry or not endpoint):
        made.meta.events.register("before-send", _Carrier(function))
        setattr(made, MARKER, function)
    return made


@cache
def _lambda() -> Any:
    # A call to another region may be a slow one (a copy of a large object): wait as long as it may take.
    return boto3.client("lambda", config=Config(read_timeout=900, retries={"mode": "standard"}))


def _body(request: AWSPreparedRequest) -> bytes:
    body = request.body
    if body is None:
        return b""
    if hasattr(body, "read"):
        return cast(bytes, body.read())  # a stream of bytes
    return body.encode() if isinstance(body, str) else bytes(body)


def envelope(request: AWSPreparedRequest) -> dict[str, Any]:
    """The signed request, as the reach function takes it."""
    body = _body(request)
    if len(body) > MAX_BODY:
        raise ReachError(message=f"a {len(body)}-byte request body cannot cross regions (limit {MAX_BODY})")
    headers = {k: v.decode() if isinstance(v, bytes) else str(v) for k, v in request.headers.items()}
    return {
        "method": request.method,
        "url": request.url,
        "headers": headers,
        "body": base64.b64encode(body).decode(),
    }


class _Raw(io.BytesIO):
    """A whole body, read the ways botocore reads one (streamed or at once)."""

    def stream(self, amt: int = 65536, decode_content: bool = True) -> Iterator[bytes]:
        while chunk := self.read(amt):
            yield chunk


def response(url: str, answer: dict[str, Any]) -> AWSResponse:
    if answer.get("transient"):  # botocore's retries apply, as to any dropped connection
        raise EndpointConnectionError(endpoint_url=url, error=answer["error"])
    if answer.get("broken"):  # a body cut short, as a direct read would raise it
        raise IncompleteReadError(actual_bytes=0, expected_bytes=-1)
    if "error" in answer:
        raise ReachError(message=f"the reach function could not carry the call: {answer['error']}")
    body = base64.b64decode(answer.get("body") or "")
    headers = dict(answer.get("headers") or {})
    # AWSResponse takes any mapping (it keeps a case-insensitive copy); the stubs name one class
    return AWSResponse(url, int(answer["status"]), headers, _Raw(body))  # type: ignore[arg-type]


class _Carrier:
    def __init__(self, function: str) -> None:
        self.function = function

    def __call__(self, request: AWSPreparedRequest, **_: Any) -> AWSResponse:
        answer = _lambda().invoke(FunctionName=self.function, Payload=json.dumps(envelope(request)))
        payload = json.loads(answer["Payload"].read() or b"{}")
        if answer.get("FunctionError"):
            raise ReachError(message=f"the reach function failed: {payload}")
        return response(request.url, payload)


class _Captured(Exception):
    def __init__(self, request: AWSPreparedRequest) -> None:
        super().__init__("captured")
        self.request = request


def _capture(request: AWSPreparedRequest, **_: Any) -> None:
    if getattr(_local, "capturing", False):
        raise _Captured(request)


def signed(made: Any, operation: str, params: dict[str, Any]) -> dict[str, Any]:
    """The request `made.<operation>(**params)` would send, signed, as an envelope, not sent."""
    made.meta.events.register_first("before-send", _capture, unique_id="hycloud-reach-capture")
    _local.capturing = True
    try:
        getattr(made, operation)(**params)
    except _Captured as got:
        return envelope(got.request)
    finally:
        _local.capturing = False
    raise ReachError(message=f"{operation} sent nothing to capture")


def send_all(made: Any, envelopes: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Send many signed requests in one call of `made`'s reach function; their answers, in order
    ({"status", "headers", "body"} or {"error"}). Many HEADs of another region's blocks cost one
    Lambda invocation (and one of the account's concurrent executions), not one each."""
    function = getattr(made, MARKER)
    answers: list[dict[str, Any]] = []
    for start in range(0, len(envelopes), BATCH):
        batch = list(envelopes[start : start + BATCH])
        got = _batch(function, batch)
        again = [i for i, a in enumerate(got) if a.get("transient")]
        if again:  # the connections that dropped, once more
            for i, answer in zip(again, _batch(function, [batch[i] for i in again]), strict=True):
                got[i] = answer
        answers.extend(got)
    return answers


def _batch(function: str, batch: list[dict[str, Any]], attempts: int = 3) -> list[dict[str, Any]]:
    for attempt in range(attempts):
        answer = _lambda().invoke(FunctionName=function, Payload=json.dumps({"batch": batch}))
        payload = json.loads(answer["Payload"].read() or b"{}")
        if not answer.get("FunctionError") and "answers" in payload:
            answers: list[dict[str, Any]] = payload["answers"]
            return answers
        if attempt == attempts - 1 or "answers" in payload or "error" in payload:
            raise ReachError(message=f"the reach function failed: {payload}")
    raise ReachError(message="the reach function was not asked (no attempts)")
