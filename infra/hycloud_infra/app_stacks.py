"""The app's stacks from context: the home instance stack in the first region of `hycloud:regions`
and one data instance stack in each other region (design: docs/GEO.md)."""

from __future__ import annotations

from pathlib import Path

import aws_cdk as cdk

from .regions import data_stack_name, regions
from .stacks.data_instance_stack import DataInstanceStack
from .stacks.instance_stack import InstanceStack
from .stacks.standby_stack import StandbyStack
from .standby import standby_region, standby_stack_name


def build_stacks(
    app: cdk.App, *, root: Path, layer_dir: Path, account: str | None
) -> tuple[InstanceStack, list[DataInstanceStack]]:
    """Data stacks first: the home controller names their resources, so they must exist before it."""
    known_zones(app, account)
    home_name = app.node.try_get_context("hycloud:instanceName")
    home, *others = regions(app.node.try_get_context("hycloud:regions"))
    dirs = {
        "functions_dir": root / "functions",
        "statemachines_dir": root / "statemachines",
        "layer_dir": layer_dir,
    }
    data = [
        DataInstanceStack(
            app,
            data_stack_name(home_name, region),
            env=cdk.Environment(account=account, region=region),
            home_stack_name=home_name,
            home_region=home,
            **dirs,
        )
        for region in others
    ]
    standby = _standby(app, home_name, home, account, dirs)
    instance = InstanceStack(
        app,
        home_name,
        data_instances=[stack.names for stack in data],
        standby=standby.names if standby else None,
        env=cdk.Environment(account=account, region=home),
        **dirs,
    )
    for stack in [*data, *([standby] if standby else [])]:
        instance.add_stack_dependency(stack)
    return instance, data


def _standby(app: cdk.App, home_name: str, home: str, account: str | None, dirs: dict) -> StandbyStack | None:
    """The standby controller stack when `hycloud:standby` names a region (docs/FAILOVER.md)."""
    region = standby_region(app.node.try_get_context("hycloud:standby"), home)
    if region is None:
        return None
    return StandbyStack(
        app,
        standby_stack_name(home_name),
        env=cdk.Environment(account=account, region=region),
        functions_dir=dirs["functions_dir"],
        layer_dir=dirs["layer_dir"],
        statemachines_dir=dirs["statemachines_dir"],
    )


def known_zones(app: cdk.App, account: str | None) -> None:
    """The zones of the regions `hycloud:availabilityZones` lists (cdk.json: the app's default
    regions), as the answers of CDK's availability-zone lookups for `account`: a first synth for a
    real account then needs no credentials. A region not listed is looked up as usual (once, with
    credentials; the CLI keeps the answer in cdk.context.json). Answers already in context win."""
    if account is None or cdk.Token.is_unresolved(account):
        return  # an account-agnostic synth takes its zones from Fn::GetAZs at deploy time
    for region, zones in (app.node.try_get_context("hycloud:availabilityZones") or {}).items():
        key = f"availability-zones:account={account}:region={region}"
        if app.node.try_get_context(key) is None:
            app.node.set_context(key, list(zones))
