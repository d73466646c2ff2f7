"""HyCloud client: SDK and `hycloud` CLI.

from hycloud import HyCloud, NotFoundError

The SDK's names load on first use (see hycloud.sdk), so `hycloud --help` does not import the client.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from . import sdk as _sdk
from .sdk import __all__ as __all__

if TYPE_CHECKING:
    from .sdk import *  # noqa: F403 - the SDK's public names, listed once in hycloud.sdk


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(_sdk, name)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
