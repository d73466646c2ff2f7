"""The Lambda layer holding the shared core library and its third-party packages."""

from pathlib import Path

from aws_cdk import aws_lambda as lambda_
from constructs import Construct


class CoreLayer(Construct):
    def __init__(self, scope: Construct, id: str, *, layer_dir: Path) -> None:
        super().__init__(scope, id)
        self.layer = lambda_.LayerVersion(
            self,
            "Layer",
            code=lambda_.Code.from_asset(str(layer_dir)),
            compatible_runtimes=[lambda_.Runtime.PYTHON_3_12],
            description="hycloud_core (with its compiled delta loops) + powertools, zfec, zstandard",
        )
