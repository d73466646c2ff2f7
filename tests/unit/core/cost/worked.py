"""What the cost tests work their figures from by hand: the price list (prices.json) and the
binary sizes (GB = 2^30 bytes), read once for the modules that share them."""

from __future__ import annotations

from hycloud_core.constants import GiB, KiB, MiB
from hycloud_core.cost import load_prices

P = load_prices()

__all__ = ["P", "GiB", "KiB", "MiB"]
