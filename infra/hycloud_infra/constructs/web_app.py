"""The web file browser: the static app in web/ in its own bucket, behind CloudFront on AWS.

A function (functions/web_publish) copies the app from its asset into the bucket and writes
`config.json` with the API's URL, so the app is configured at deploy time; on AWS a custom
resource runs it at each deploy. The local cloud (account 000000000000) has neither CloudFront
nor custom resources (LocalStack Pro only): there infra/local/deploy.py invokes the function
after deploying, and the app is read straight from the bucket through the local S3 endpoint
(`<endpoint>/<bucket>/index.html`, the `LocalWebUrl` output).
"""

from pathlib import Path

from aws_cdk import CustomResource, Duration, RemovalPolicy, Stack
from aws_cdk import aws_apigateway as apigw
from aws_cdk import aws_cloudfront as cloudfront
from aws_cdk import aws_cloudfront_origins as origins
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_s3_assets as s3_assets
from constructs import Construct

LOCAL_ACCOUNT = "000000000000"


class WebApp(Construct):
    def __init__(
        self, scope: Construct, id: str, *, web_dir: Path, publisher_dir: Path, api: apigw.RestApi
    ) -> None:
        super().__init__(scope, id)
        local = Stack.of(self).account == LOCAL_ACCOUNT
        self.bucket = s3.Bucket(
            self,
            "Site",
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            encryption=s3.BucketEncryption.S3_MANAGED,
            enforce_ssl=True,
            removal_policy=RemovalPolicy.DESTROY,  # only the app's own files: redeployed at will
        )
        files = s3_assets.Asset(self, "Files", path=str(web_dir))
        publisher = lambda_.Function(
            self,
            "Publish",
            runtime=lambda_.Runtime.PYTHON_3_12,
            handler="handler.handler",
            code=lambda_.Code.from_asset(str(publisher_dir), exclude=["__pycache__", "*.pyc"]),
            timeout=Duration.minutes(2),
            memory_size=256,
            environment={
                "SITE_BUCKET": self.bucket.bucket_name,
                "ASSET_BUCKET": files.s3_bucket_name,
                "ASSET_KEY": files.s3_object_key,
                "API_URL": api.url,
            },
        )
        self.publisher = publisher
        files.grant_read(publisher)
        self.bucket.grant_read_write(publisher)
        self.bucket.grant_delete(publisher)
        self.url: str | None = None
        if not local:
            # Properties name the asset, so a changed app runs the function again.
            CustomResource(
                self,
                "Published",
                service_token=publisher.function_arn,
                properties={"Files": files.s3_object_key},
            )
            distribution = cloudfront.Distribution(
                self,
                "Cdn",
                default_root_object="index.html",
                default_behavior=cloudfront.BehaviorOptions(
                    origin=origins.S3BucketOrigin.with_origin_access_control(self.bucket),
                    viewer_protocol_policy=cloudfront.ViewerProtocolPolicy.REDIRECT_TO_HTTPS,
                ),
            )
            self.url = f"https://{distribution.distribution_domain_name}/"
