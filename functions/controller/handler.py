"""Controller: the REST API's single Lambda proxy. Routes live in routes/, one module per concern.

Parameters and bodies are validated by Powertools against the routes' types (models.py) before
a route runs; every failure, expected or not, leaves as the project's JSON error shape.
"""

from __future__ import annotations

from answers import error_answer
from aws_lambda_powertools.event_handler import APIGatewayRestResolver, CORSConfig, Response
from aws_lambda_powertools.event_handler.exceptions import NotFoundError as RouteNotFound
from aws_lambda_powertools.event_handler.openapi.exceptions import (
    RequestUnsupportedContentType,
    RequestValidationError,
)
from aws_lambda_powertools.utilities.idempotency.exceptions import (
    IdempotencyAlreadyInProgressError,
    IdempotencyValidationError,
)
from context import authenticate
from idempotency import HEADER, idempotent
from request_log import name_route, name_user, request_done, set_correlation_id, tag_route
from routes import (
    bundles,
    coded,
    delta,
    dirs,
    files,
    merkle,
    meta,
    ops,
    relay,
    replication,
    share,
    snapshots,
    trash,
    tree_jobs,
    uploads,
    usage,
    versions,
)
from validation import bad_request, body_is_text, parse_json

from hycloud_core import cors
from hycloud_core.errors import BadRequestError, ConflictError, HyCloudError
from hycloud_core.observability import logger, observed

# Browsers on any origin (the web app) may call the API: the key travels in a header, never a cookie.
CORS = CORSConfig(
    allow_origin="*",
    allow_headers=list(cors.ALLOW_HEADERS),
    expose_headers=list(cors.EXPOSE_HEADERS),
    max_age=cors.MAX_AGE_S,
)
app = APIGatewayRestResolver(enable_validation=True, json_body_deserializer=parse_json, cors=CORS)
app.use(middlewares=[name_route, authenticate, name_user, replication.mark_diverged, idempotent])
for module in (
    files,
    dirs,
    meta,
    ops,
    relay,
    uploads,
    usage,
    delta,
    tree_jobs,
    share,
    merkle,
    bundles,
    coded,
    replication,
    versions,
    trash,
    snapshots,
):
    app.include_router(module.router)


def _error(err: HyCloudError) -> Response:
    tag_route(app)  # validation failures answer before any middleware runs
    return error_answer(err)


@app.exception_handler(HyCloudError)
def _hycloud_error(err: HyCloudError) -> Response:
    if err.status >= 500 and getattr(err, "retry_after", None) is None:  # not an expected "later"
        logger.exception("request failed")
    return _error(err)


def _unauthenticated() -> HyCloudError | None:
    """Why the caller is refused, if it is: validation runs before authentication, answers must not."""
    try:
        authenticate(app, lambda _: None)
    except HyCloudError as err:
        return err
    return None


@app.exception_handler(RequestValidationError)
def _invalid(err: RequestValidationError) -> Response:
    return _error(_unauthenticated() or bad_request(err))


@app.exception_handler(RequestUnsupportedContentType)
def _unsupported(_: RequestUnsupportedContentType) -> Response:
    refused = HyCloudError("send the body as application/json", code="unsupported-media-type", status=415)
    return _error(_unauthenticated() or refused)


@app.exception_handler(UnicodeDecodeError)
def _undecodable(err: UnicodeDecodeError) -> Response:
    if body_is_text(app.current_event):  # not the request's fault: ours
        return _unexpected(err)
    return _error(_unauthenticated() or BadRequestError("body is not valid UTF-8 JSON", code="bad-body"))


@app.exception_handler(IdempotencyValidationError)
def _key_reused(_: IdempotencyValidationError) -> Response:
    message = f"this {HEADER} was used for a different request; use a new key"
    return _error(HyCloudError(message, code="idempotency-key-reused", status=422))


@app.exception_handler(IdempotencyAlreadyInProgressError)
def _key_busy(_: IdempotencyAlreadyInProgressError) -> Response:
    message = f"a request with this {HEADER} is still running; retry later"
    return _error(ConflictError(message, code="idempotency-key-in-use"))


@app.not_found
def _no_route(_: RouteNotFound) -> Response:
    return _error(HyCloudError("no such API route", code="no-such-route", status=404))


@app.exception_handler(Exception)
def _unexpected(err: Exception) -> Response:
    logger.exception("unexpected error")
    return _error(HyCloudError("internal error"))


@observed
def handler(event: dict, context: object) -> dict:
    set_correlation_id(event)
    return request_done(app.resolve(event, context))
