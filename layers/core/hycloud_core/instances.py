"""The instances a controller can use: its own (home) and the data instances of other regions.

The CDK app passes the data instances in `HYCLOUD_INSTANCES` (JSON list, see docs/GEO.md); with
one region the variable is absent and the home instance is the only one.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from . import constants as c
from .store import ring


@dataclass(frozen=True)
class Instance:
    region: str
    bucket: str
    relay_state_machine: str
    delta_state_machine: str
    home: bool = False

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def instances(
    home_region: str, bucket: str, relay_state_machine: str, delta_state_machine: str, listed: str | None
) -> list[Instance]:
    """Home first, then the listed data instances in their configured order."""
    home = Instance(home_region, bucket, relay_state_machine, delta_state_machine, home=True)
    return [home, *described(json.loads(listed or "[]"))]


def described(items: list[dict[str, Any]]) -> list[Instance]:
    """Data instances from their descriptions (`HYCLOUD_INSTANCES`, the ring record)."""
    return [
        Instance(
            item["region"],
            item["bucket"],
            item.get("relayStateMachineArn", ""),
            item.get("deltaStateMachineArn", ""),
        )
        for item in items
    ]


def from_environment() -> list[Instance]:
    """What a function's own environment says (Lambda sets AWS_REGION)."""
    env = os.environ
    return instances(
        env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION", ""),
        env.get(c.ENV_BUCKET, ""),
        env.get(c.ENV_RELAY_STATE_MACHINE, ""),
        env.get(c.ENV_DELTA_STATE_MACHINE, ""),
        env.get(c.ENV_INSTANCES),
    )


def on_ring(table: Any) -> list[Instance]:
    """The instances coded blocks are placed on: the ring a migration set, else the deployed ones."""
    deployed = from_environment()
    listed = ring.load(table)
    return deployed if listed is None else [deployed[0], *described(listed)]


def reachable(table: Any) -> list[Instance]:
    """Every instance a job may read or clean: deployed ones and those on the ring, home first."""
    seen: dict[str, Instance] = {}
    for item in [*from_environment(), *on_ring(table)]:
        seen.setdefault(item.region, item)
    return list(seen.values())


def job_instance(instances: Sequence[Instance], optimal: str | None) -> Instance | None:
    """The data instance a coded file's relay or delta job runs at: the user's optimal instance
    when it is one with job workflows; None means home (the first instance)."""
    for item in instances[1:]:
        if item.region == optimal and item.relay_state_machine and item.delta_state_machine:
            return item
    return None
