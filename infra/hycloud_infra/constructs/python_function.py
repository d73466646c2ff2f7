"""Defaults shared by every HyCloud function: Python 3.12 on the core layer, one asset folder each."""

from pathlib import Path
from typing import Any

from aws_cdk import Duration
from aws_cdk import aws_lambda as lambda_
from constructs import Construct


def python_function(
    scope: Construct,
    id: str,
    *,
    code_dir: Path,
    layer: lambda_.ILayerVersion,
    environment: dict[str, str],
    timeout_s: int = 29,
    memory_mb: int = 1024,
    **extra: Any,
) -> lambda_.Function:
    return lambda_.Function(
        scope,
        id,
        runtime=lambda_.Runtime.PYTHON_3_12,
        handler="handler.handler",
        code=lambda_.Code.from_asset(str(code_dir), exclude=["__pycache__", "*.pyc"]),
        layers=[layer],
        timeout=Duration.seconds(timeout_s),
        memory_size=memory_mb,
        environment={"POWERTOOLS_SERVICE_NAME": "hycloud", **environment},
        **extra,
    )
