"""HyCloud client: SDK and `hycloud` CLI.

from hycloud import HyCloud, NotFoundError
"""

from .sdk import *  # noqa: F403 - the SDK's public names, listed once in hycloud.sdk
from .sdk import __all__ as __all__
