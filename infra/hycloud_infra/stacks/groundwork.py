"""What the home, data-instance and standby stacks each start from: the removal policy and the
small-file settings the context asks for, and the EFS volume with the reach function that carries
its functions' calls out of the VPC."""

from collections.abc import Callable
from pathlib import Path
from typing import Any

from aws_cdk import RemovalPolicy
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from hycloud_core import constants as c

from ..constructs.efs_volume import EfsVolume
from ..constructs.reach import Reach

Context = Callable[[str], Any]  # a construct's node.try_get_context


def removal_policy(ctx: Context) -> RemovalPolicy:
    """`hycloud:removalPolicy` "destroy" (throw-away deployments) deletes the stores with the
    stack; otherwise they are kept, as stored data must be."""
    return RemovalPolicy.DESTROY if ctx("hycloud:removalPolicy") == "destroy" else RemovalPolicy.RETAIN


def small_file_env(ctx: Context) -> dict[str, str]:
    """The small-file threshold every function is told, and whether it is fixed (no adaptation)."""
    return {
        c.ENV_SMALL_FILE_THRESHOLD: str(ctx("hycloud:smallFileThreshold") or 2 * c.MiB),
        **(
            {c.ENV_SMALL_FILE_THRESHOLD_FIXED: "true"}
            if str(ctx("hycloud:smallFileThresholdFixed")).lower() == "true"
            else {}
        ),
    }


def reached_volume(
    scope: Construct, *, functions_dir: Path, layer: lambda_.ILayerVersion, removal: RemovalPolicy
) -> EfsVolume:
    """The stack's EFS volume and VPC, with the reach function its mounted functions call out through."""
    reach = Reach(scope, "Reach", code_dir=functions_dir / "reach", layer=layer).function
    return EfsVolume(scope, "Efs", removal_policy=removal, reach=reach)
