"""Errors shared by client and cloud.

Every error that reaches the API carries an HTTP status and a stable, kebab-case code, so the
controller turns it into a JSON body in one place and the client maps it back to an exception
and an exit code without parsing messages.
"""

from __future__ import annotations

import re
from typing import Any


class HyCloudError(Exception):
    status: int = 500
    code: str = "internal-error"

    def __init__(self, message: str, *, code: str | None = None, status: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        if code:
            self.code = code
        if status:
            self.status = status

    def to_body(self) -> dict[str, Any]:
        return {"error": {"code": self.code, "message": self.message}}


class BadRequestError(HyCloudError):
    status, code = 400, "bad-request"


def checked_match(value: object, pattern: re.Pattern[str], message: str, code: str) -> str:
    """`value` if it is a string `pattern` matches, else a 400 saying `message`: how an id from a
    request is checked before it names a record, a file or an execution."""
    if not isinstance(value, str) or not pattern.match(value):
        raise BadRequestError(message, code=code)
    return value


class InvalidPathError(BadRequestError):
    code = "invalid-path"


class UnauthorizedError(HyCloudError):
    status, code = 401, "unauthorized"


class ForbiddenError(HyCloudError):
    status, code = 403, "forbidden"


class NotFoundError(HyCloudError):
    status, code = 404, "not-found"


class ConflictError(HyCloudError):
    status, code = 409, "conflict"


class PayloadTooLargeError(HyCloudError):
    status, code = 413, "payload-too-large"


class TryLaterError(HyCloudError):
    """An expected "later" (503 with `Retry-After`, whole seconds): the cloud could not finish in
    time or lost a race it will win on the next try; the client waits and asks again, and the
    controller does not log it as a failure."""

    status, code = 503, "busy"
    retry_after: int = 1


_BY_STATUS: dict[int, type[HyCloudError]] = {
    cls.status: cls
    for cls in (
        BadRequestError,
        UnauthorizedError,
        ForbiddenError,
        NotFoundError,
        ConflictError,
        PayloadTooLargeError,
    )
}


def error_from_body(status: int, body: dict[str, Any] | None) -> HyCloudError:
    """Rebuild the error a response body describes (client side)."""
    info = (body or {}).get("error", {}) if isinstance(body, dict) else {}
    cls = _BY_STATUS.get(status, HyCloudError)
    return cls(info.get("message", f"HTTP {status}"), code=info.get("code"), status=status)
