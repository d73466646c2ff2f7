"""HyCloud client: SDK and `hycloud` CLI.

from hycloud import HyCloud, NotFoundError
"""

from .sdk import (
    BadRequestError,
    ConflictError,
    ForbiddenError,
    HyCloud,
    HyCloudError,
    InvalidPathError,
    NotFoundError,
    PayloadTooLargeError,
    Subscriber,
    TreeJobDetached,
    TreeJobFailed,
    TreeResult,
    UnauthorizedError,
)

__all__ = [
    "BadRequestError",
    "ConflictError",
    "ForbiddenError",
    "HyCloud",
    "HyCloudError",
    "InvalidPathError",
    "NotFoundError",
    "PayloadTooLargeError",
    "Subscriber",
    "TreeJobDetached",
    "TreeJobFailed",
    "TreeResult",
    "UnauthorizedError",
]
