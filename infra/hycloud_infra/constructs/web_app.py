"""The web file browser: the static app in web/ in its own bucket, behind CloudFront on AWS.

A function (functions/web_publish) copies the app from its asset into the bucket and writes
`config.json` with the API's URL, so the app is configured at deploy time; on AWS a custom
resource runs it at each deploy. The local cloud (account 000000000000) has neither CloudFront
nor custom resources (LocalStack Pro only): there infra/local/deploy.py invokes the function
after deploying, and the app is read straight from the bucket through the local S3 endpoint
(`<endpoint>/<bucket>/index.html`, the `LocalWebUrl` output).
"""

from pathlib import Path

from aws_cdk import CustomResource, RemovalPolicy, Stack
from aws_cdk import aws_apigateway as apigw
from aws_cdk import aws_cloudfront as cloudfront
from aws_cdk import aws_cloudfront_origins as origins
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_s3_assets as s3_assets
from constructs import Construct

from .python_function import python_function

LOCAL_ACCOUNT = "000000000000"


class WebApp(Construct):
    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        web_dir: Path,
        publisher_dir: Path,
        api: apigw.RestApi,
        layer: lambda_.ILayerVersion,
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
        publisher = python_function(  # the project's function defaults: logs, retention, tracing
            self,
            "Publish",
            code_dir=publisher_dir,
            layer=layer,
            environment={
                "SITE_BUCKET": self.bucket.bucket_name,
                "ASSET_BUCKET": files.s3_bucket_name,
                "ASSET_KEY": files.s3_object_key,
                "API_URL": api.url,
            },
            timeout_s=120,
            memory_mb=256,
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
            _keep_findings(distribution, CDN_FINDINGS)


# cdk-nag (AwsSolutions) findings on the distribution that the design keeps, and why. Written as
# the metadata cdk-nag reads, so the app needs no cdk-nag import to carry them.
CDN_FINDINGS = {
    "AwsSolutions-CFR1": "The app is for every user wherever they are; no country is excluded.",
    "AwsSolutions-CFR2": "No WAF: the distribution serves a few static files, and every API call they make "
    "is authenticated by an API key and throttled at the REST API.",
    "AwsSolutions-CFR3": "The distribution serves only the app's static files, the same to everyone; what "
    "users do goes through the REST API, whose requests are logged.",
    "AwsSolutions-CFR4": "The default *.cloudfront.net certificate; a custom domain with its own certificate "
    "and TLSv1.2_2021 is a choice of the deployment, not of the app.",
}


def _keep_findings(construct: Construct, findings: dict[str, str]) -> None:
    resource = construct.node.default_child
    rules = [{"id": rule, "reason": reason} for rule, reason in findings.items()]
    resource.add_metadata("cdk_nag", {"rules_to_suppress": rules})
