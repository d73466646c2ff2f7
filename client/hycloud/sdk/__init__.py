"""The HyCloud SDK: `HyCloud` has one method per filesystem operation; its errors are exported here.

The client and its transfer machinery load on first use of a name (PEP 562), so importing a
piece of the package (`hycloud.sdk.trees`, or the CLI's `--help`) does not pay for all of it.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

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


def __getattr__(name: str) -> Any:
    """A public name's module is imported the first time the name is asked for."""
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(_LAZY[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
