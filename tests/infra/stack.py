"""The instance stack as the infra tests synthesize it: the project's cdk.json context, an empty
layer folder (the real layer is built at deploy time), and what a test adds."""

from __future__ import annotations

import json
from pathlib import Path

import aws_cdk as cdk

from hycloud_infra.app_stacks import known_zones
from hycloud_infra.stacks.instance_stack import InstanceStack

ROOT = Path(__file__).resolve().parents[2]


def instance_stack(
    layer_dir: Path, name: str = "Test", account: str | None = None, **context: object
) -> tuple[cdk.App, InstanceStack]:
    (layer_dir / "python").mkdir(exist_ok=True)
    (layer_dir / "python" / "placeholder.py").write_text("")
    app = cdk.App(context={**json.loads((ROOT / "cdk.json").read_text())["context"], **context})
    known_zones(app, account)  # as app_stacks.build_stacks does
    stack = InstanceStack(
        app,
        name,
        functions_dir=ROOT / "functions",
        statemachines_dir=ROOT / "statemachines",
        layer_dir=layer_dir,
        env=cdk.Environment(account=account, region="us-east-1") if account else None,
    )
    return app, stack
