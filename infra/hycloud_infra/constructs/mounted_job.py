"""A job kind: its EFS-mounted function, with the records table, and the workflow that runs it.

Tree jobs (constructs/tree_jobs.py) and bundle jobs (constructs/bundle_jobs.py) are this shape;
the dispatcher starts their workflows from the FOP queue (docs/SCHEDULING.md).
"""

from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from .job_assets import JobAssets


class MountedJob(Construct):
    def __init__(
        self,
        scope: Construct,
        id: str,
        assets: JobAssets,
        *,
        function_id: str,
        code: str,
        asl: str,
        function_arn_key: str,
        table: dynamodb.ITable,
        timeout_s: int,
    ) -> None:
        super().__init__(scope, id)
        self.function = assets.function(self, function_id, code=code, timeout_s=timeout_s)
        table.grant_read_write_data(self.function)  # records, leases, quota, Merkle nodes
        self.state_machine = assets.workflow(
            self, "Workflow", asl=asl, invokes={function_arn_key: self.function}
        )

    def allow_control(self, grantee: lambda_.IFunction) -> None:
        """Let the controller start executions and read their status."""
        self.state_machine.grant_start_execution(grantee)
        self.state_machine.grant_read(grantee)
