"""S3 bucket for large-file content and the single DynamoDB table (key design: hycloud_core.store.records)."""

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_s3 as s3
from constructs import Construct

from .storage_tiers import s3_tiering_rules


def content_bucket(
    scope: Construct, *, removal_policy: RemovalPolicy, bucket_name: str | None = None
) -> s3.Bucket:
    """The bucket of large-file content; a data instance in another region names it (see regions.py)."""
    return s3.Bucket(
        scope,
        "Content",
        bucket_name=bucket_name,
        block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
        encryption=s3.BucketEncryption.S3_MANAGED,
        enforce_ssl=True,
        versioned=False,  # content keys are immutable; old versions are kept by explicit retention
        removal_policy=removal_policy,
        lifecycle_rules=[
            s3.LifecycleRule(abort_incomplete_multipart_upload_after=Duration.days(7)),
            s3.LifecycleRule(prefix="shares/", expiration=Duration.days(1)),  # copies of shared small files
            # checksum lists and deltas too large for the API pass through here (delta jobs)
            s3.LifecycleRule(prefix="staging/", expiration=Duration.days(1)),
            # a data instance: coded files its relay jobs made whole, and the layouts its jobs read
            s3.LifecycleRule(prefix="relay/", expiration=Duration.days(1)),
            s3.LifecycleRule(prefix="layouts/", expiration=Duration.days(1)),
            # contents and coded blocks unread go to cheaper tiers (storage_tiers.py)
            *s3_tiering_rules(scope),
        ],
        # The web app sends parts to and reads files from presigned URLs (the URL is the credential).
        cors=[
            s3.CorsRule(
                allowed_methods=[s3.HttpMethods.GET, s3.HttpMethods.PUT, s3.HttpMethods.HEAD],
                allowed_origins=["*"],
                allowed_headers=["*"],
                exposed_headers=["ETag", "x-amz-checksum-sha256"],
                max_age=600,
            )
        ],
    )


def records_table(
    scope: Construct,
    *,
    removal_policy: RemovalPolicy,
    table_name: str | None = None,
    stream: dynamodb.StreamViewType | None = None,
) -> dynamodb.Table:
    """The single table (records.py); the standby names its own (see standby.py). With a standby,
    the home table's stream carries its records there (docs/FAILOVER.md)."""
    return dynamodb.Table(
        scope,
        "Table",
        table_name=table_name,
        partition_key=dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING),
        sort_key=dynamodb.Attribute(name="sk", type=dynamodb.AttributeType.STRING),
        billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
        point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
            point_in_time_recovery_enabled=True
        ),
        removal_policy=removal_policy,
        time_to_live_attribute="expiration",  # Idempotency-Key answers, job ledger records
        stream=stream,
    )


class DataStores(Construct):
    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        removal_policy: RemovalPolicy,
        stream: dynamodb.StreamViewType | None = None,
    ) -> None:
        super().__init__(scope, id)
        self.bucket = content_bucket(self, removal_policy=removal_policy)
        self.table = records_table(self, removal_policy=removal_policy, stream=stream)
