"""What API Gateway (REST, regional) and Lambda allow one API request, and what the API keeps to.

API Gateway answers 504 ("Endpoint request timed out") when the controller has not answered
within 29 s, and 413 when a body exceeds 10 MiB; the controller is a Lambda proxy, so the request
must also fit Lambda's 6 MB synchronous payload as an event (a binary body base64-encoded in it),
else API Gateway answers 413 "Request Too Long". The controller holds a long poll at most
MAX_WAIT_S and answers ANSWER_MARGIN_S before API Gateway would give up; the client sends no
body that cannot fit (docs/LOCAL_CLOUD_RULES.md shows the local cloud applies these limits).
"""

from __future__ import annotations

import json

GATEWAY_TIMEOUT_S = 29.0  # API Gateway's integration timeout (REST API default and maximum)
GATEWAY_BODY_LIMIT = 10 * 1024 * 1024  # API Gateway's payload quota, REST API (not adjustable)
LAMBDA_EVENT_LIMIT = 6 * 1024 * 1024  # Lambda's synchronous invocation request quota
EVENT_ENVELOPE = 64 * 1024  # the event's headers, query and request context, generously
MAX_WAIT_S = 20.0  # the longest the controller holds a request for a job (long poll)
ANSWER_MARGIN_S = 4.0  # kept, within GATEWAY_TIMEOUT_S, for a last check and the answer


def event_bytes(body: bytes, binary: bool) -> int:
    """Bytes a request body takes in the Lambda proxy event: base64 when binary, else JSON-escaped text."""
    if binary:
        return 4 * ((len(body) + 2) // 3)
    try:
        return len(json.dumps(body.decode("utf-8")))
    except UnicodeDecodeError:  # API Gateway would pass it base64-encoded
        return 4 * ((len(body) + 2) // 3)


def refusal(body: bytes, binary: bool) -> str | None:
    """Why API Gateway or Lambda would refuse a request with this body; None when it fits."""
    if len(body) > GATEWAY_BODY_LIMIT:
        return f"a {len(body)}-byte body is over API Gateway's {GATEWAY_BODY_LIMIT}-byte limit"
    size = event_bytes(body, binary) + EVENT_ENVELOPE
    if size > LAMBDA_EVENT_LIMIT:
        return (
            f"a {len(body)}-byte body takes about {size} bytes in the controller's event, over "
            f"Lambda's {LAMBDA_EVENT_LIMIT}-byte request limit"
        )
    return None
