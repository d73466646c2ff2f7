"""Usage and cost report: what a namespace occupies and what it costs at list prices."""

from .idle import IdleCost, Shape, deployment_shape, idle_monthly, shape_from_context
from .model import Assumptions, CostBreakdown, Operations, all_efs_cost, all_s3_cost, compare, monthly_cost
from .prices import Prices, load_prices
from .usage import SharedContent, Usage, UsageBuilder, measure_namespace, shares, usage_from_sizes

__all__ = [
    "Assumptions",
    "CostBreakdown",
    "IdleCost",
    "Operations",
    "Prices",
    "Shape",
    "SharedContent",
    "Usage",
    "UsageBuilder",
    "all_efs_cost",
    "all_s3_cost",
    "compare",
    "deployment_shape",
    "idle_monthly",
    "load_prices",
    "measure_namespace",
    "monthly_cost",
    "shape_from_context",
    "shares",
    "usage_from_sizes",
]
