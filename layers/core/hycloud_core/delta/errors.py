"""Errors raised by delta sync; all derive from `DeltaError` so callers can catch one type."""


class DeltaError(Exception):
    """Base class for delta-sync errors."""


class DeltaFormatError(DeltaError, ValueError):
    """A signature or delta is truncated, garbled, or of an unknown version."""


class DeltaMismatch(DeltaError):
    """The patched output does not hash to the value the delta carries.

    Raised when a short strong checksum let a wrong block match, or when the old file is not the
    one the signature was computed from. Retry with full-length strong sums (`sync.fetch_and_patch`).
    """
