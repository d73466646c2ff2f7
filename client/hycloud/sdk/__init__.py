"""The HyCloud SDK: `HyCloud` has one method per filesystem operation; its errors are exported here."""

from hycloud_core.errors import (
    BadRequestError,
    ConflictError,
    ForbiddenError,
    HyCloudError,
    InvalidPathError,
    NotFoundError,
    PayloadTooLargeError,
    UnauthorizedError,
)

from ..transfer.config import TransferConfig
from .client import HyCloud
from .subscribers import Subscriber
from .tree_jobs import TreeJobDetached, TreeJobFailed
from .trees import TreeResult

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
    "TransferConfig",
    "TreeResult",
    "UnauthorizedError",
]
