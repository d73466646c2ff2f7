"""Write openapi.json, the API contract, from the routes themselves.

    .venv/bin/python functions/controller/export_openapi.py

The document is what Powertools derives from the routes' typed parameters and models, plus what
lives outside them: the API-key scheme and the Idempotency-Key header with its error answers.
A unit test fails when the committed file differs from what this writes, so the contract
schemathesis checks against the deployment is always the code's.
"""

from __future__ import annotations

import json
from pathlib import Path

from aws_lambda_powertools.event_handler.openapi.models import HTTPBearer, Server
from context import PUBLIC_PREFIX
from handler import app
from idempotency import HEADER, KEY_PATTERN, covers

OUT = Path(__file__).with_name("openapi.json")
DESCRIPTION = (
    "A user's filesystem: small files and directories on EFS, large files in S3 behind link files. "
    'Every error is a JSON body {"error": {"code": <stable kebab-case code>, "message": <text>}}. '
    "Mutating requests may carry an Idempotency-Key: a retry with the same key gets the first answer."
)
ERROR = {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorBody"}}}
KEY_PARAMETER = {
    "name": HEADER,
    "in": "header",
    "required": False,
    "schema": {"type": "string", "pattern": KEY_PATTERN},
    "description": "Same key on every retry of one request; answers are kept an hour.",
}


def _idempotency(operation: dict) -> None:
    """Document the header and its two refusals on an operation that honours it."""
    operation.setdefault("parameters", []).append(KEY_PARAMETER)
    answers = operation["responses"]
    answers.setdefault(
        "409", {"description": "Conflict, or the same key is still running.", "content": ERROR}
    )
    answers["422"] = {"description": f"The {HEADER} was used for a different request.", "content": ERROR}


def document() -> dict:
    """The OpenAPI document of the deployed controller."""
    doc = json.loads(
        app.get_openapi_json_schema(
            title="HyCloud REST API",
            version="1",
            description=DESCRIPTION,
            servers=[Server(url="/")],
            security_schemes={"apiKey": HTTPBearer(description="`hck_<key id>_<secret>`")},
            security=[{"apiKey": []}],
        )
    )
    for route, methods in doc["paths"].items():
        for method, operation in methods.items():
            # Validation errors answer 400 in the project's shape, not Powertools' 422.
            operation["responses"].pop("422", None)
            if covers(method, route):
                _idempotency(operation)
            if route.startswith(PUBLIC_PREFIX):
                operation["security"] = []  # the share token is the credential
    for unused in ("HTTPValidationError", "ValidationError", "ResponseValidationError"):
        doc["components"]["schemas"].pop(unused, None)
    return doc


def render() -> str:
    return json.dumps(document(), indent=2, sort_keys=True) + "\n"


if __name__ == "__main__":
    OUT.write_text(render())
    print(f"wrote {OUT}")
