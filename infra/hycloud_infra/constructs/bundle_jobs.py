"""Bundle jobs: the function (EFS-mounted) that commits a bundle staged in S3, and its workflow.

The controller queues a staged bundle's commit in the FOP queue; a dispatch pass starts the
workflow (statemachines/bundle_commit.asl.json) when a worker is free (docs/SCHEDULING.md).
"""

from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_s3 as s3
from constructs import Construct

from .job_assets import JobAssets
from .mounted_job import MountedJob


class BundleJobs(MountedJob):
    def __init__(
        self, scope: Construct, id: str, assets: JobAssets, *, table: dynamodb.ITable, bucket: s3.IBucket
    ) -> None:
        super().__init__(  # a staged bundle inflates to 32 MiB at most: 1 GiB of memory is ample
            scope,
            id,
            assets,
            function_id="Commit",
            code="bundle",
            asl="bundle_commit.asl.json",
            function_arn_key="BundleFunctionArn",
            table=table,
            timeout_s=300,
        )
        bucket.grant_read(self.function, "staging/*")
        bucket.grant_delete(self.function, "staging/*")
