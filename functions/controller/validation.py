"""Malformed requests become 400s in the project's error shape, never 500s.

Powertools validates parameters and bodies against the routes' types; this module parses JSON
bodies defensively (depth, lone surrogates, non-finite numbers) and turns validation errors
into a `HyCloudError` naming the first offending field.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

from aws_lambda_powertools.event_handler.openapi.exceptions import ValidationException
from aws_lambda_powertools.utilities.data_classes.common import BaseProxyEvent

from hycloud_core.errors import BadRequestError, HyCloudError

MAX_MESSAGE = 200
CODE_BY_PLACE = {"body": "bad-body", "query": "bad-parameter", "header": "bad-parameter"}


def _refuse_constant(name: str) -> float:
    raise ValueError(name)


def _finite(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise ValueError("number out of range")
    return value


def _unicode(value: Any) -> bool:
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def parse_json(text: str) -> Any:
    """Request bodies as JSON; anything Python would choke on later is a decode error now.

    Deep nesting (RecursionError), lone surrogates ("\\ud800", no UTF-8 form for DynamoDB or
    EFS) and NaN/Infinity would otherwise surface as 500s deep inside a route.
    """
    try:
        value = json.loads(text, parse_constant=_refuse_constant, parse_float=_finite)
        if _unicode(value):
            return value
        reason = "a string holds a lone surrogate"
    except RecursionError:
        reason = "nested too deeply"
    except json.JSONDecodeError:
        raise
    except ValueError:  # NaN/Infinity, 1e400, integers of more than 4300 digits
        reason = "a number is out of range"
    raise json.JSONDecodeError(reason, text if isinstance(text, str) else "", 0)


def body_is_text(event: BaseProxyEvent) -> bool:
    """Whether the request body decodes as UTF-8 (API Gateway base64-encodes a body it cannot pass as text)."""
    if not event.is_base64_encoded or not event.body:
        return True
    try:
        base64.b64decode(event.body).decode("utf-8")
    except (ValueError, binascii.Error):
        return False
    return True


def _describe(error: dict) -> tuple[str, str]:
    """(code, message) for one Powertools/pydantic error entry."""
    place, *field = [str(part) for part in error.get("loc", ("body",))]
    kind = error.get("type", "")
    if kind == "json_invalid":
        reason = (error.get("ctx") or {}).get("error", "malformed")
        return "bad-body", f"body is not valid JSON: {reason}"
    name = ".".join(field)
    if kind == "missing" and place == "query":
        return "missing-parameter", f"query parameter '{name}' is required"
    code = kind if "-" in kind else CODE_BY_PLACE.get(place, "bad-request")
    where = f"{place} field '{name}'" if name else place
    return code, f"{where}: {error.get('msg', 'invalid')}"


def bad_request(err: ValidationException) -> HyCloudError:
    """The first validation error as the project's 400 (the code says which kind, the text which field)."""
    errors = list(err.errors()) or [{"loc": ("body",), "type": "bad-request", "msg": "invalid request"}]
    code, message = _describe(errors[0])
    return BadRequestError(message[:MAX_MESSAGE], code=code)
