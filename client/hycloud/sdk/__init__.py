"""The HyCloud SDK: `HyCloud` has one method per filesystem operation."""

from .client import HyCloud

__all__ = ["HyCloud"]
