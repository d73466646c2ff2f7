"""The user namespace on EFS and the filesystem operations over EFS, S3 and DynamoDB.

Names are imported on first use (PEP 562): a function that needs only the relay cache
(`hycloud_core.fs.relay_cache`) does not pay for boto3 and the stores at its cold start.
"""

from importlib import import_module
from typing import Any

_WHERE = {"Entry": ".namespace", "Namespace": ".namespace", "FileSystem": ".operations"}

__all__ = ["Entry", "FileSystem", "Namespace"]


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(_WHERE[name], __name__), name)
