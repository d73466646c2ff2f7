"""The HyCloud SDK: `HyCloud` has one method per filesystem operation; its errors are exported here.

The client and its transfer machinery load on first use of a name (PEP 562), so importing a
piece of the package (`hycloud.sdk.trees`, or the CLI's `--help`) does not pay for all of it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

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

from ..lazy import exports

if TYPE_CHECKING:
    from ..transfer.config import TransferConfig
    from .client import HyCloud
    from .subscribers import Subscriber
    from .tree_jobs import TreeJobDetached, TreeJobFailed
    from .trees import TreeResult

_LAZY = {
    "HyCloud": "hycloud.sdk.client",
    "Subscriber": "hycloud.sdk.subscribers",
    "TransferConfig": "hycloud.transfer.config",
    "TreeJobDetached": "hycloud.sdk.tree_jobs",
    "TreeJobFailed": "hycloud.sdk.tree_jobs",
    "TreeResult": "hycloud.sdk.trees",
}

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


__getattr__, __dir__ = exports(__name__, _LAZY, __all__)
