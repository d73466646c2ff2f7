"""One JSON log line and one metric per API request: correlation id, user, route and status.

The correlation id is the caller's `X-Correlation-Id` when it sends one, else API Gateway's request
id; it is in every log line of the request and returned in the `X-Correlation-Id` response header,
so a caller can find its request in the logs (an id longer than 128 characters or with other
than letters, digits and `_.:/-` is ignored). The route is the pattern a request matched (not its
path), which keeps the metric's dimensions few.
"""

from __future__ import annotations

import re

from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response
from aws_lambda_powertools.event_handler.middlewares import NextMiddleware
from aws_lambda_powertools.metrics import MetricUnit

from hycloud_core.observability import logger, metrics, with_dimension

CORRELATION_HEADER = "x-correlation-id"
CORRELATION_ID = re.compile(r"^[\w.:/-]{1,128}$")  # what a log line may quote; anything else is ignored
UNMATCHED = "unmatched"
NOT_FOUND_RULE = ".*"  # in the rule Powertools gives the route it makes for a request no route matched


def set_correlation_id(event: dict) -> None:
    """The caller's `X-Correlation-Id` when it is a plain id, else API Gateway's request id."""
    headers = {k.lower(): v for k, v in (event.get("headers") or {}).items()}
    sent = headers.get(CORRELATION_HEADER) or ""
    fallback = (event.get("requestContext") or {}).get("requestId")
    logger.set_correlation_id(sent if CORRELATION_ID.match(sent) else fallback)


def tag_route(app: APIGatewayRestResolver) -> None:
    """Put the matched route (`GET /v1/files`) into every later log line of this request."""
    route = app.context.get("_route")
    if route is not None:
        matched = NOT_FOUND_RULE not in route.rule.pattern  # our routes are literal paths
        logger.append_keys(route=f"{route.method} {route.path}" if matched else UNMATCHED)


def name_route(app: APIGatewayRestResolver, next_middleware: NextMiddleware) -> Response:
    tag_route(app)
    return next_middleware(app)


def name_user(app: APIGatewayRestResolver, next_middleware: NextMiddleware) -> Response:
    """After authentication: the caller's internal id in every later log line of this request."""
    logger.append_keys(user=app.context["user"])
    return next_middleware(app)


def request_done(response: dict) -> dict:
    """Log the request's outcome, count it by route and status, and hand back its correlation id."""
    status = int(response["statusCode"])
    route = logger.get_current_keys().get("route", UNMATCHED)
    with_dimension("route", route)
    with_dimension("status", str(status))
    metrics.add_metric("Requests", MetricUnit.Count, 1)
    logger.info("request", extra={"status": status})
    correlation_id = logger.get_correlation_id()
    if correlation_id:
        metrics.add_metadata(key="correlation_id", value=correlation_id)  # not a dimension: one per request
        headers = response.setdefault("multiValueHeaders", {})
        headers["X-Correlation-Id"] = [correlation_id]
    return response
