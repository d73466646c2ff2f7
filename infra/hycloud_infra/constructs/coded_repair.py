"""Repair jobs of erasure-coded files: the EFS-mounted step and the workflow that loops it.

Deployed in the home instance only with several regions: the step reads the users' link files
on the home EFS and reads and writes the blocks in every instance's bucket (docs/GEO.md).
"""

from aws_cdk import ArnFormat, Duration, Stack
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_s3 as s3
from constructs import Construct

from ..regions import in_account
from .job_assets import JobAssets


class CodedRepair(Construct):
    def __init__(
        self,
        scope: Construct,
        id: str,
        assets: JobAssets,
        *,
        table: dynamodb.ITable,
        home_bucket: s3.IBucket,
        data_buckets: list[str],
    ) -> None:
        super().__init__(scope, id)
        self.step_function = assets.function(self, "Step", code="repair", timeout_s=120)
        table.grant_read_write_data(self.step_function)  # the ring record, path leases
        home_bucket.grant_read_write(self.step_function)
        home_bucket.grant_delete(self.step_function)  # the block sweep
        arns = [f"arn:{Stack.of(self).partition}:s3:::{name}" for name in data_buckets]
        self.step_function.add_to_role_policy(
            iam.PolicyStatement(
                actions=["s3:GetObject*", "s3:PutObject", "s3:DeleteObject"],  # blocks moved or rebuilt
                resources=[f"{a}/*" for a in arns],
                conditions=in_account(Stack.of(self).account),
            )
        )
        self.step_function.add_to_role_policy(  # also HeadBucket; a missing block answers 404, not 403
            iam.PolicyStatement(
                actions=["s3:ListBucket"], resources=arns, conditions=in_account(Stack.of(self).account)
            )
        )
        events.Rule(  # blocks no link names: swept hourly, like the collector's objects
            self,
            "SweepSchedule",
            schedule=events.Schedule.rate(Duration.hours(1)),
            targets=[
                targets.LambdaFunction(
                    self.step_function, event=events.RuleTargetInput.from_object({"action": "sweep"})
                )
            ],
        )
        stack = Stack.of(self)
        name = f"{stack.stack_name}-CodedRepair"
        # a fixed name: the controller's rights name the machine and its executions by string,
        # without the Fn::Split of the ARN that LocalStack cannot resolve for a new resource
        self.machine_arn = stack.format_arn(
            service="states",
            resource="stateMachine",
            resource_name=name,
            arn_format=ArnFormat.COLON_RESOURCE_NAME,
        )
        self.executions_arn = stack.format_arn(
            service="states",
            resource="execution",
            resource_name=f"{name}:*",
            arn_format=ArnFormat.COLON_RESOURCE_NAME,
        )
        self.state_machine = assets.workflow(
            self,
            "Workflow",
            asl="coded_repair.asl.json",
            invokes={"RepairFunctionArn": self.step_function},
            state_machine_name=name,
        )

    def allow_control(self, grantee: lambda_.IFunction) -> None:
        """Start executions and read their status."""
        grantee.add_to_role_policy(
            iam.PolicyStatement(actions=["states:StartExecution"], resources=[self.machine_arn])
        )
        grantee.add_to_role_policy(
            iam.PolicyStatement(actions=["states:DescribeExecution"], resources=[self.executions_arn])
        )
