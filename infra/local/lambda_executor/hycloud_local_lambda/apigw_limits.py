"""API Gateway (REST, regional) limits LocalStack does not apply, applied in its handler chain.

LocalStack's REST API passes any body to its integration and waits for a Lambda proxy as long as
the function runs. AWS does neither:

- A request body over 10 MiB (10,485,760 bytes) is answered 413 ``HTTP content length exceeded
  10485760 bytes.`` (``text``) before anything else runs.
- A Lambda proxy event over Lambda's synchronous request limit (6 MiB; the body is base64 in the
  event when binary) is refused by Lambda before the function runs; API Gateway answers 413
  ``{"message": "Request Too Long"}`` with ``x-amzn-ErrorType: BadRequestException``.
- An integration that has not answered within its timeout (``timeoutInMillis``, 29 s by
  default) is answered 504 ``{"message": "Endpoint request timed out"}``; the function goes on
  running to its own end or timeout, its answer discarded.

These are the ``limits`` kind of the local cloud's AWS rules (``guard.py``): ``on`` answers as AWS
does, ``report`` lets the request through and logs what AWS would have answered, ``off`` skips
the checks. The mode is read per request (``HYCLOUD_LOCAL_ENFORCE`` of LocalStack's environment,
then ``<state>/guard/settings.json``), so switching needs no restart. Every refusal is one line of
``<state>/guard/refused.jsonl`` (service ``apigateway``); this process's counts go to
``<state>/guard/counts-apigateway-<pid>.json``.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import re
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hycloud_local_lambda import efs, guard

LOG = logging.getLogger(__name__)

BODY_LIMIT = 10 * 1024 * 1024  # API Gateway quota: payload size, REST API (not adjustable)
LAMBDA_REQUEST_LIMIT = guard.LAMBDA_SYNC_PAYLOAD_LIMIT  # Lambda quota: synchronous invocation request
TIMEOUT_MS = 29_000  # API Gateway's default (and, without a quota increase, maximum) integration timeout
BODY_MESSAGE = f"HTTP content length exceeded {BODY_LIMIT} bytes."
EVENT_MESSAGE = "Request Too Long"
TIMEOUT_MESSAGE = "Endpoint request timed out"
FLUSH_EVERY_S = 1.0


def mode() -> str:
    """The ``limits`` mode now: ``on``, ``report`` or ``off``."""
    return guard.parse_modes(guard.settings_text(str(efs.state_dir())))["limits"]


def timeout_s(integration: dict | None) -> float:
    """The integration's timeout as deployed (API Gateway's default when unset)."""
    try:
        millis = int((integration or {}).get("timeoutInMillis") or TIMEOUT_MS)
    except (TypeError, ValueError):
        millis = TIMEOUT_MS
    return max(millis, 50) / 1000


def body_size(body: bytes, binary: bool) -> int:
    """Bytes a body takes in the event as AWS sends it: base64 for a binary media type (or bytes
    that are not UTF-8), else JSON-escaped text. LocalStack passes any UTF-8 body as text."""
    if not binary:
        try:
            return len(json.dumps(body.decode("utf-8")))
        except UnicodeDecodeError:
            pass
    return 4 * ((len(body) + 2) // 3)


def event_size(event: dict, body: bytes, binary: bool) -> int:
    """Bytes of the Lambda proxy event AWS would send to Invoke for this request."""
    return len(json.dumps({**event, "body": None}).encode()) + body_size(body, binary)


def is_binary(context) -> bool:
    """Whether the request's Content-Type is one of the API's binary media types."""
    from localstack.services.apigateway.next_gen.execute_api.helpers import (
        mime_type_matches_binary_media_types,
    )

    headers = (context.invocation_request or {}).get("headers") or {}
    types = context.deployment.rest_api.rest_api.get("binaryMediaTypes", [])
    return bool(mime_type_matches_binary_media_types(headers.get("Content-Type"), types))


def function_of(uri: str | None) -> str:
    """The function a Lambda integration URI names (``…:function:<name>[:qualifier]/invocations``)."""
    found = re.search(r":function:([^/:]+)", uri or "")
    return found.group(1) if found else "apigateway"


class Ledger:
    """Counts and refusal records, in the files the guard of each function process writes too."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.lock = threading.Lock()
        self.counts: dict[str, Any] = {"checked": 0, "refused": 0, "reported": 0}
        self.flushed = 0.0
        self.pending: threading.Timer | None = None

    def checked(self) -> None:
        with self.lock:
            self.counts["checked"] += 1
        self.flush_soon()

    def refused(self, enforced: bool, record: dict) -> None:
        with self.lock:
            self.counts["refused" if enforced else "reported"] += 1
            by_kind = self.counts.setdefault("by_kind", {})
            by_kind["limits:apigateway"] = by_kind.get("limits:apigateway", 0) + 1
        line = {"time": round(time.time(), 3), "pid": os.getpid(), "kind": "limits", "enforced": enforced}
        self._append({**line, "service": "apigateway", **record})
        self.flush()

    def flush_soon(self) -> None:
        """At most one counts file write a second; a later one is scheduled so none is lost."""
        with self.lock:
            if self.pending is not None:
                return
            wait = self.flushed + FLUSH_EVERY_S - time.monotonic()
            if wait > 0:
                self.pending = threading.Timer(wait, self.flush)
                self.pending.daemon = True
                self.pending.start()
                return
        self.flush()

    def flush(self) -> None:
        with self.lock:
            self.pending = None
            self.flushed = time.monotonic()
            record = {
                "function": "apigateway",
                "pid": os.getpid(),
                "modes": {"limits": mode()},
                **self.counts,
            }
        path = self.folder / f"counts-apigateway-{os.getpid()}.json"
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(".tmp")
            tmp.write_text(json.dumps(record))
            tmp.replace(path)
        except OSError as e:
            LOG.debug("API Gateway limits: counts not written: %s", e)

    def _append(self, record: dict) -> None:
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            with open(self.folder / "refused.jsonl", "a") as f:
                f.write(json.dumps(record) + "\n")
        except OSError as e:
            LOG.debug("API Gateway limits: refusal not logged: %s", e)


_LEDGER: Ledger | None = None


def ledger() -> Ledger:
    global _LEDGER
    if _LEDGER is None:
        _LEDGER = Ledger(efs.state_dir() / "guard")
    return _LEDGER


def _where(context) -> dict:
    """What a refusal record says about the request: API, route, function, region."""
    request = getattr(context, "invocation_request", None) or {}
    resource = getattr(context, "resource", None) or {}
    return {
        "function": function_of((getattr(context, "integration", None) or {}).get("uri")),
        "operation": f"{request.get('http_method', '')} {request.get('path') or resource.get('path', '')}",
        "region": getattr(context, "region", "") or "",
        "api": getattr(context, "api_id", "") or "",
    }


def refuse(context, detail: dict, error: Exception | None, enforced: bool) -> None:
    """Log what AWS answers; raise `error` (a gateway exception) when the limit is enforced."""
    ledger().refused(enforced, {**_where(context), **detail})
    if enforced and error is not None:
        raise error


# ---------------------------------------------------------------- handlers


class BodyLimitHandler:
    """First of the chain after parsing: a body over 10 MiB is answered 413 as AWS does, nothing invoked."""

    def __call__(self, chain, context, response) -> None:
        current = mode()
        if current == "off":
            return
        ledger().checked()
        size = len((context.invocation_request or {}).get("body") or b"")
        if size <= BODY_LIMIT:
            return
        enforced = current == "on"
        refuse(
            context,
            {"bytes": size, "limit": BODY_LIMIT, "status": 413, "error": BODY_MESSAGE},
            None,
            enforced,
        )
        if enforced:
            chain.respond(413, BODY_MESSAGE, {"Content-Type": "text; charset=utf-8"})


def _request_too_long():
    from localstack.services.apigateway.next_gen.execute_api.gateway_response import RequestTooLargeError

    error = RequestTooLargeError(EVENT_MESSAGE)
    error.code = "BadRequestException"  # the x-amzn-ErrorType AWS sends with this answer
    return error


def _timed_out():
    from localstack.services.apigateway.next_gen.execute_api.gateway_response import IntegrationTimeoutError

    return IntegrationTimeoutError(TIMEOUT_MESSAGE)


def checked_event(create: Callable) -> Callable:
    """Wraps ``create_lambda_input_event``: an event Lambda would refuse is answered 413 instead."""

    @functools.wraps(create)
    def create_lambda_input_event(self, context):
        event = create(self, context)
        current = mode()
        if current != "off":
            body = (context.integration_request or {}).get("body") or b""
            size = event_size(event, body, is_binary(context))
            if size > LAMBDA_REQUEST_LIMIT:
                detail = {"bytes": size, "limit": LAMBDA_REQUEST_LIMIT, "status": 413, "error": EVENT_MESSAGE}
                refuse(context, detail, _request_too_long(), current == "on")
        return event

    return create_lambda_input_event


def timed(invoke: Callable) -> Callable:
    """Wraps an integration's ``invoke``: no answer within its timeout is a 504, the call left running."""

    @functools.wraps(invoke)
    def timed_invoke(self, context):
        current = mode()
        if current == "off":
            return invoke(self, context)
        limit = timeout_s(context.integration)
        outcome: dict[str, Any] = {}
        done = threading.Event()

        def run() -> None:
            try:
                outcome["value"] = invoke(self, context)
            except BaseException as e:  # handed to the request's thread
                outcome["error"] = e
            finally:
                done.set()

        started = time.monotonic()
        threading.Thread(target=run, name="apigw-integration", daemon=True).start()
        if not done.wait(limit):
            detail = {"seconds": limit, "status": 504, "error": TIMEOUT_MESSAGE}
            if current == "on":  # the client is answered now; the invocation runs on, unheard
                refuse(context, detail, _timed_out(), True)
            done.wait()  # report: the client gets the late answer, the log says AWS would not have
            refuse(context, {**detail, "seconds": round(time.monotonic() - started, 3)}, None, False)
        if "error" in outcome:
            raise outcome["error"]
        return outcome["value"]

    return timed_invoke


_INSTALLED = False
_LOCK = threading.Lock()


def install_patches() -> None:
    """Adds the body check to LocalStack's REST API handler chain and wraps its Lambda proxy integration."""
    global _INSTALLED
    with _LOCK:
        if _INSTALLED:
            return
        from localstack.services.apigateway.next_gen.execute_api import handlers
        from localstack.services.apigateway.next_gen.execute_api.integrations.aws import (
            RestApiAwsProxyIntegration,
        )

        handlers.modify_request.append(BodyLimitHandler())
        proxy = RestApiAwsProxyIntegration
        proxy.create_lambda_input_event = checked_event(proxy.create_lambda_input_event)
        proxy.invoke = timed(proxy.invoke)
        _INSTALLED = True
    LOG.info("API Gateway limits applied: body %d bytes, Lambda event %d bytes, timeout %d ms",
             BODY_LIMIT, LAMBDA_REQUEST_LIMIT, TIMEOUT_MS)  # fmt: skip
