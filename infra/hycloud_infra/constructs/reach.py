"""The reach function: the way out of the region for the functions in the VPC (hycloud_core/reach.py).

It runs outside any VPC and holds no rights: it sends requests its callers signed with their own
roles. Callers reach it through the VPC's Lambda endpoint; python_function gives every function
mounted on the volume its name and the right to invoke it.
"""

from pathlib import Path

from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from .python_function import python_function


class Reach(Construct):
    def __init__(self, scope: Construct, id: str, *, code_dir: Path, layer: lambda_.ILayerVersion) -> None:
        super().__init__(scope, id)
        # 900 s: a copy of a large object to another region's bucket is one (slow) request.
        self.function = python_function(
            self, "Function", code_dir=code_dir, layer=layer, environment={}, timeout_s=900, memory_mb=512
        )
