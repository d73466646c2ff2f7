"""Decisions shared by controller, relay and client: estimates, plans, priorities, queues.

Pure logic with no cloud imports; the DynamoDB and Lambda layers call into it.
"""

from hycloud_core.control.bandwidth import BandwidthEstimator, Direction, InstanceBandwidth, harmonic_mean
from hycloud_core.control.elimination import Eliminator, LocalOp
from hycloud_core.control.fop import (
    FopQueue,
    Operation,
    OpKind,
    blocking_partitions,
    fop_priority,
    marker_keys,
    queue_sort_key,
    related,
)
from hycloud_core.control.local_queue import LocalOperationQueue, link_congested
from hycloud_core.control.planner import (
    Plan,
    PlanProblem,
    plan_download,
    plan_exact,
    plan_fast,
    seconds_per_byte,
    split_replicated,
)
from hycloud_core.control.relay_adoption import RelayPool, Worker, WorkerState
from hycloud_core.control.selection import ServiceInstances, select_service_instances

__all__ = [
    "BandwidthEstimator",
    "Direction",
    "Eliminator",
    "FopQueue",
    "InstanceBandwidth",
    "LocalOp",
    "LocalOperationQueue",
    "OpKind",
    "Operation",
    "Plan",
    "PlanProblem",
    "RelayPool",
    "ServiceInstances",
    "Worker",
    "WorkerState",
    "blocking_partitions",
    "fop_priority",
    "harmonic_mean",
    "link_congested",
    "marker_keys",
    "plan_download",
    "plan_exact",
    "plan_fast",
    "queue_sort_key",
    "related",
    "seconds_per_byte",
    "select_service_instances",
    "split_replicated",
]
