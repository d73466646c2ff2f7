"""Usage and cost report: what a namespace occupies and what it costs at list prices."""

from .model import Assumptions, CostBreakdown, Operations, all_efs_cost, all_s3_cost, compare, monthly_cost
from .prices import Prices, load_prices
from .usage import SharedContent, Usage, UsageBuilder, measure_namespace, shares, usage_from_sizes

__all__ = [
    "Assumptions",
    "CostBreakdown",
    "Operations",
    "Prices",
    "SharedContent",
    "Usage",
    "UsageBuilder",
    "all_efs_cost",
    "all_s3_cost",
    "compare",
    "load_prices",
    "measure_namespace",
    "monthly_cost",
    "shares",
    "usage_from_sizes",
]
