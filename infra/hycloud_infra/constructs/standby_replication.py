"""Replication into the standby from the home instance (docs/FAILOVER.md):

- the stream replicator: the table's stream, filtered to users, keys, user ids, objects and usage,
  feeds a function that writes them into the standby's table in order (batches of up to 1,000 within
  1 s, bisected on error, a failing record retried alone from its place, records still failing
  after 10 attempts or 1 day go to a dead-letter queue) (hycloud_core/standby/record_stream.py);
- the namespace job: a function with the primary's EFS mounted that brings each user's namespace
  in step by Merkle exchange (hycloud_core/standby/replicate.py), every
  `hycloud:standbyEveryMinutes` (default 1; 0 for no schedule) and whenever invoked; asked to
  (`{"backfill": true}`), it copies the records by scan (a standby added to a running deployment).
"""

from aws_cdk import Duration, Stack
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_event_sources as sources
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_sqs as sqs
from cdk_nag import NagPackSuppression, NagSuppressions
from constructs import Construct

from hycloud_core.standby.record_stream import stream_filter

from ..regions import in_account
from ..standby import StandbyNames
from .job_assets import JobAssets
from .python_function import python_function

ENV_STANDBY = "HYCLOUD_STANDBY"


class StandbyReplication(Construct):
    def __init__(
        self,
        scope: Construct,
        id: str,
        assets: JobAssets,
        *,
        standby: StandbyNames,
        table: dynamodb.ITable,
        bucket: s3.IBucket,
    ) -> None:
        """`assets`: the home instance's; the replicator mounts its EFS, the stream replicator not."""
        super().__init__(scope, id)
        assets = assets.with_environment({ENV_STANDBY: standby.describe(Stack.of(scope))})
        self.function = assets.function(self, "Replicator", code="replicator", timeout_s=900)
        self.stream_function = self._stream_replicator(assets, table)
        for fn in (self.function, self.stream_function):
            table.grant_read_write_data(fn)  # reads every record; writes the status items
            bucket.grant_read(fn)
            self._reach_standby(fn, standby)
        self._schedule(self.function)

    def _stream_replicator(self, assets: JobAssets, table: dynamodb.ITable) -> lambda_.Function:
        fn = python_function(
            self,
            "StreamReplicator",
            code_dir=assets.functions_dir / "record_stream",
            layer=assets.layer,
            environment=assets.environment,
            timeout_s=300,  # a large object's content is copied before its record
            memory_mb=512,
        )
        dead = sqs.Queue(self, "StreamDeadLetters", enforce_ssl=True, retention_period=Duration.days(14))
        NagSuppressions.add_resource_suppressions(
            dead,
            [NagPackSuppression(id="AwsSolutions-SQS3", reason="It is the dead-letter destination itself.")],
        )
        fn.add_event_source(
            sources.DynamoEventSource(
                table,
                starting_position=lambda_.StartingPosition.TRIM_HORIZON,
                batch_size=1000,  # filtered-out records fill reads too: at 100 a busy table outruns it
                max_batching_window=Duration.seconds(1),
                parallelization_factor=1,  # one batch per shard at a time: a key's changes in order
                bisect_batch_on_error=True,
                report_batch_item_failures=True,
                retry_attempts=10,
                max_record_age=Duration.days(1),
                on_failure=sources.SqsDlq(dead),
                filters=[lambda_.FilterCriteria.filter(stream_filter())],
            )
        )
        return fn

    def _reach_standby(self, fn: lambda_.Function, standby: StandbyNames) -> None:
        """Rights on the standby's table, apply function and bucket, by their names."""
        arns = standby.arns(Stack.of(self))
        fn.add_to_role_policy(
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
        fn.add_to_role_policy(
            iam.PolicyStatement(actions=["lambda:InvokeFunction"], resources=[arns["function"]])
        )
        mine = in_account(Stack.of(self).account)
        fn.add_to_role_policy(  # a managed copy of a large object is multipart: aborted when it fails
            iam.PolicyStatement(
                actions=["s3:GetObject", "s3:PutObject", "s3:AbortMultipartUpload"],
                resources=[f"{arns['bucket']}/*"],
                conditions=mine,
            )
        )
        fn.add_to_role_policy(
            iam.PolicyStatement(actions=["s3:ListBucket"], resources=[arns["bucket"]], conditions=mine)
        )

    def _schedule(self, fn: lambda_.Function) -> None:
        every = Stack.of(self).node.try_get_context("hycloud:standbyEveryMinutes")
        minutes = 1 if every is None else int(every)
        if minutes > 0:  # 0: only when invoked (the local cloud, docs/FAILOVER.md)
            events.Rule(
                self,
                "Schedule",
                schedule=events.Schedule.rate(Duration.minutes(minutes)),
                targets=[targets.LambdaFunction(fn)],
            )
