"""CDK entry point: creates the stacks and nothing else."""

import os
import sys
from pathlib import Path

import aws_cdk as cdk

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "infra"), str(ROOT / "layers" / "core")]
from build_layer import build  # noqa: E402

from hycloud_infra.stacks.instance_stack import InstanceStack  # noqa: E402

app = cdk.App()
InstanceStack(
    app,
    app.node.try_get_context("hycloud:instanceName"),
    functions_dir=ROOT / "functions",
    statemachines_dir=ROOT / "statemachines",
    layer_dir=build(),
    env=cdk.Environment(
        account=os.environ.get("CDK_DEFAULT_ACCOUNT"), region=os.environ.get("CDK_DEFAULT_REGION")
    ),
)
app.synth()
