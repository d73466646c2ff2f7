"""The web app and CORS in the template: CloudFront in front of a private bucket on AWS, none locally."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from aws_cdk.assertions import Match, Template

from tests.infra.stack import instance_stack

ROOT = Path(__file__).resolve().parents[2]


def _template(tmp_path_factory, account: str | None) -> Template:
    return Template.from_stack(instance_stack(tmp_path_factory.mktemp("layer"), "Web", account)[1])


@pytest.fixture(scope="module")
def aws(tmp_path_factory) -> Template:
    return _template(tmp_path_factory, None)


def test_app_is_served_by_cloudfront_from_a_private_bucket(aws):
    aws.resource_count_is("AWS::CloudFront::Distribution", 1)
    aws.has_resource_properties(
        "AWS::CloudFront::Distribution",
        {
            "DistributionConfig": Match.object_like(
                {
                    "DefaultRootObject": "index.html",
                    "DefaultCacheBehavior": Match.object_like({"ViewerProtocolPolicy": "redirect-to-https"}),
                }
            )
        },
    )
    aws.resource_count_is("AWS::CloudFront::OriginAccessControl", 1)
    aws.has_output("WebUrl", {})
    # Each deploy publishes the app and its config.json (the asset's key changes with the app).
    aws.has_resource_properties("AWS::CloudFormation::CustomResource", {"Files": Match.any_value()})


def test_cors_preflight_and_gateway_errors(aws):
    options = aws.find_resources("AWS::ApiGateway::Method", {"Properties": {"HttpMethod": "OPTIONS"}})
    assert len(options) == 2  # the root and {proxy+}
    for kind in ("DEFAULT_4XX", "DEFAULT_5XX"):
        aws.has_resource_properties(
            "AWS::ApiGateway::GatewayResponse",
            {
                "ResponseType": kind,
                "ResponseParameters": {"gatewayresponse.header.Access-Control-Allow-Origin": "'*'"},
            },
        )
    aws.has_resource_properties(
        "AWS::S3::Bucket",
        {"CorsConfiguration": {"CorsRules": [Match.object_like({"AllowedMethods": ["GET", "PUT", "HEAD"]})]}},
    )


def test_local_cloud_gets_no_cloudfront_and_no_custom_resource(tmp_path_factory):
    local = _template(tmp_path_factory, "000000000000")
    local.resource_count_is("AWS::CloudFront::Distribution", 0)
    local.resource_count_is("AWS::CloudFormation::CustomResource", 0)
    local.has_output("WebPublishFunctionName", {})


def test_file_downloads_ask_for_a_binary_media_type_the_api_declares(aws):
    """API Gateway returns a binary body as binary only when the request's first Accept type is
    one of the REST API's binaryMediaTypes; otherwise the browser saves base64 text."""
    (api,) = aws.find_resources("AWS::ApiGateway::RestApi").values()
    binary = api["Properties"]["BinaryMediaTypes"]
    app = "\n".join(path.read_text() for path in sorted((ROOT / "web").glob("*.js")))
    calls = re.findall(r'Api\.call\("GET", "/v1/files", \{([^\n]*)\}\);', app)
    assert calls, "the download's GET /v1/files call is not found in web/*.js"
    for options in calls:
        found = re.search(r"headers: \{ Accept: (\w+) \}", options)
        assert found, f"the download sends no Accept header: {options}"
        value = re.search(rf'const {found.group(1)} = "([^"]+)";', app)
        assert value, f"{found.group(1)} is not a string constant of web/*.js"
        assert value.group(1).split(",")[0].strip() in binary, (value.group(1), binary)
