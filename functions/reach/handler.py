"""The reach function: sends a request another function signed to a region that one cannot reach.

Functions in the VPC have no route out of their region (no NAT; hycloud_core/reach.py says why).
This one runs outside any VPC and sends the request it is given exactly as signed, then returns
status, headers and body. It adds no rights: AWS judges each request by its signer's role, and a
change to a signed request voids its signature. It sends only to the AWS endpoints of the
services the app uses (and, in the local cloud, to the local endpoint), never elsewhere.

Event: {"method", "url", "headers", "body" (base64)}. Answer: {"status", "headers", "body"}, or
{"error"} when the request may not be sent or its answer is too large to return. Or
{"batch": [event, ...]}: each sent, IN_FLIGHT at a time; {"answers": [answer, ...]} in order,
together at most MAX_BODY bytes of body.
"""

from __future__ import annotations

import base64
import os
import re
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any
from urllib.parse import urlsplit

import urllib3

from hycloud_core.observability import logger
from hycloud_core.reach import MAX_BODY

SERVICES = ("s3", "dynamodb", "states", "lambda")
_AWS_HOST = re.compile(
    r"^(?:[a-z0-9][a-z0-9.-]*\.)?(?P<service>[a-z0-9-]+)\.(?P<region>[a-z]{2}(?:-[a-z]+)+-\d)\.amazonaws\.com$"
)
_HTTP = urllib3.PoolManager(maxsize=16, retries=False, timeout=urllib3.Timeout(connect=10, read=880))
_DROPPED = {"transfer-encoding", "connection"}
IN_FLIGHT = 16
ATTEMPTS = 3


def _local_endpoints() -> set[str]:
    """host:port of the local cloud's endpoints (set only there)."""
    found = set()
    for name, value in os.environ.items():
        if name.startswith("AWS_ENDPOINT_URL") and value:
            parts = urlsplit(value)
            found.add(parts.netloc.lower())
    return found


def allowed(url: str) -> bool:
    parts = urlsplit(url)
    if parts.netloc.lower() in _local_endpoints():
        return True
    if parts.scheme != "https":
        return False
    match = _AWS_HOST.match(parts.hostname or "")
    return bool(match) and match["service"].split("-")[0] in SERVICES


def handler(event: dict[str, Any], context: object) -> dict[str, Any]:
    if "batch" in event:
        with ThreadPoolExecutor(IN_FLIGHT) as pool:
            answers = list(pool.map(send, event["batch"]))
        if sum(len(a.get("body", "")) for a in answers) * 3 // 4 > MAX_BODY:
            return {"error": f"the answers hold more than {MAX_BODY} bytes"}
        return {"answers": answers}
    return send(event)


def send(event: dict[str, Any]) -> dict[str, Any]:
    url, method = event["url"], event["method"]
    if not allowed(url):
        logger.warning("refused to carry a request", extra={"host": urlsplit(url).netloc})
        return {"error": f"not an endpoint of this app's services: {urlsplit(url).netloc}"}
    body = base64.b64decode(event.get("body") or "")
    headers = {k: v for k, v in (event.get("headers") or {}).items() if k.lower() not in _DROPPED}
    if body and not any(k.lower() == "content-length" for k in headers):
        headers["Content-Length"] = str(len(body))
    for attempt in range(ATTEMPTS):
        try:
            got = _HTTP.request(
                method, url, body=body or None, headers=headers, redirect=False, preload_content=False
            )
        except urllib3.exceptions.HTTPError as err:  # the connection, not the answer: the caller may retry
            if attempt == ATTEMPTS - 1:
                return {"error": f"{type(err).__name__}: {err}", "transient": True}
            time.sleep(0.2 * 2**attempt)
            continue
        try:
            data = got.read(MAX_BODY + 1, decode_content=False)
            break
        except urllib3.exceptions.HTTPError as err:  # an answer whose body was cut short
            got.close()
            return {"error": f"{type(err).__name__}: {err}", "broken": True, "status": got.status}
    declared = got.headers.get("Content-Length")
    if method != "HEAD" and declared is not None and len(data) < int(declared) <= MAX_BODY:
        got.close()  # the answer ended before its length: its body was cut short
        return {"error": f"a body of {len(data)} of {declared} bytes", "broken": True, "status": got.status}
    if len(data) > MAX_BODY:
        got.close()  # the rest is not read: the connection cannot be used again
        return {"error": f"the answer is larger than {MAX_BODY} bytes"}
    got.release_conn()
    return {
        "status": got.status,
        "headers": dict(got.headers.items()),
        "body": base64.b64encode(data).decode(),
    }
