"""Errors raised by delta sync; all derive from `DeltaError` so callers can catch one type.

They are `HyCloudError`s with a stable code, so the controller answers them like any other bad
input and the client ends with one line and an exit code instead of a traceback.
"""

from ..errors import BadRequestError


class DeltaError(BadRequestError):
    """Base class for delta-sync errors."""

    code = "delta-error"


class DeltaFormatError(DeltaError, ValueError):
    """A signature or delta is truncated, garbled, or of an unknown version."""

    code = "bad-delta"


class DeltaMismatch(DeltaError):
    """The patched output does not hash to the value the delta carries.

    Raised when a short strong checksum let a wrong block match, or when the old file is not the
    one the signature was computed from. Retry with full-length strong sums (`sync.fetch_and_patch`).
    """

    code = "delta-mismatch"
