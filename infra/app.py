"""CDK entry point: creates the stacks and nothing else."""

import os
import sys
from pathlib import Path

import aws_cdk as cdk

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "infra"), str(ROOT / "layers" / "core")]
from build_layer import build  # noqa: E402

from hycloud_infra.app_stacks import build_stacks  # noqa: E402

app = cdk.App()
build_stacks(app, root=ROOT, layer_dir=build(), account=os.environ.get("CDK_DEFAULT_ACCOUNT"))
app.synth()
