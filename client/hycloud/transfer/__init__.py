"""Large-file transfers straight to and from S3 with presigned URLs: parallel, verified, resumable.

Each name loads its module on first use (PEP 562): `hycloud.transfer.config` alone stays light.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .config import TransferConfig
    from .download import download_large, download_relay
    from .progress import Progress
    from .upload import upload_large

_LAZY = {
    "Progress": "hycloud.transfer.progress",
    "TransferConfig": "hycloud.transfer.config",
    "download_large": "hycloud.transfer.download",
    "download_relay": "hycloud.transfer.download",
    "upload_large": "hycloud.transfer.upload",
}

__all__ = ["Progress", "TransferConfig", "download_large", "download_relay", "upload_large"]


def __getattr__(name: str) -> Any:
    """A public name's module is imported the first time the name is asked for."""
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(_LAZY[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
