"""The replication job of the home instance: a function with the primary's EFS mounted that brings
the standby in step (hycloud_core/standby/replicate.py), every `hycloud:standbyEveryMinutes`
(default 1; 0 for no schedule) and whenever invoked."""

from typing import Any

from aws_cdk import Duration, Stack
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_s3 as s3
from constructs import Construct

from ..standby import StandbyNames
from .python_function import python_function

ENV_STANDBY = "HYCLOUD_STANDBY"


class StandbyReplication(Construct):
    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        standby: StandbyNames,
        code_dir: Any,
        layer: lambda_.ILayerVersion,
        environment: dict[str, str],
        table: dynamodb.ITable,
        bucket: s3.IBucket,
        mount: dict[str, Any],
    ) -> None:
        super().__init__(scope, id)
        stack = Stack.of(self)
        self.function = python_function(
            self,
            "Replicator",
            code_dir=code_dir,
            layer=layer,
            environment={**environment, ENV_STANDBY: standby.describe(stack)},
            timeout_s=900,
            memory_mb=1024,
            **mount,
        )
        table.grant_read_write_data(self.function)  # reads every record; writes the status item
        bucket.grant_read(self.function)
        arns = standby.arns(stack)
        self.function.add_to_role_policy(
            iam.PolicyStatement(
                actions=[
                    "dynamodb:Scan",
                    "dynamodb:Query",
                    "dynamodb:GetItem",
                    "dynamodb:PutItem",
                    "dynamodb:UpdateItem",
                    "dynamodb:DeleteItem",
                    "dynamodb:BatchWriteItem",
                ],
                resources=[arns["table"]],
            )
        )
        self.function.add_to_role_policy(
            iam.PolicyStatement(actions=["lambda:InvokeFunction"], resources=[arns["function"]])
        )
        self.function.add_to_role_policy(
            iam.PolicyStatement(actions=["s3:GetObject", "s3:PutObject"], resources=[f"{arns['bucket']}/*"])
        )
        self.function.add_to_role_policy(
            iam.PolicyStatement(actions=["s3:ListBucket"], resources=[arns["bucket"]])
        )
        every = stack.node.try_get_context("hycloud:standbyEveryMinutes")
        minutes = 1 if every is None else int(every)
        if minutes > 0:  # 0: only when invoked (the local cloud, docs/FAILOVER.md)
            events.Rule(
                self,
                "Schedule",
                schedule=events.Schedule.rate(Duration.minutes(minutes)),
                targets=[targets.LambdaFunction(self.function)],
            )
