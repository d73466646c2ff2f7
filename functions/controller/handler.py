"""Controller: the REST API's single Lambda proxy. Routes live in routes/, one module per concern."""

from __future__ import annotations

from aws_lambda_powertools import Logger
from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response
from aws_lambda_powertools.event_handler.exceptions import NotFoundError as RouteNotFound
from context import authenticate
from routes import delta, dirs, files, meta, ops, relay, tree_jobs, uploads, usage

from hycloud_core.errors import HyCloudError

logger = Logger(service="hycloud-controller")
app = APIGatewayRestResolver()
app.use(middlewares=[authenticate])
for module in (files, dirs, meta, ops, relay, uploads, usage, delta, tree_jobs):
    app.include_router(module.router)


@app.exception_handler(HyCloudError)
def _hycloud_error(err: HyCloudError) -> Response:
    if err.status >= 500:
        logger.exception("request failed")
    return Response(status_code=err.status, content_type="application/json", body=err.to_body())


@app.not_found
def _no_route(_: RouteNotFound) -> Response:
    err = HyCloudError("no such API route", code="no-such-route", status=404)
    return Response(status_code=404, content_type="application/json", body=err.to_body())


@app.exception_handler(Exception)
def _unexpected(err: Exception) -> Response:
    logger.exception("unexpected error")
    body = HyCloudError("internal error").to_body()
    return Response(status_code=500, content_type="application/json", body=body)


@logger.inject_lambda_context
def handler(event: dict, context: object) -> dict:
    return app.resolve(event, context)
