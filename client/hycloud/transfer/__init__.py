"""Large-file transfers straight to and from S3 with presigned URLs: parallel, verified, resumable.

Each name loads its module on first use (PEP 562): `hycloud.transfer.config` alone stays light.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import exports

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


__getattr__, __dir__ = exports(__name__, _LAZY, __all__)
