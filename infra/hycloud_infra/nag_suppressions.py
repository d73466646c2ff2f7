"""cdk-nag (AwsSolutions) findings the design keeps, each with the reason it is kept.

tests/infra/test_nag.py runs the rules over the synthesized stack and fails on any finding that
is neither fixed nor listed here.
"""

from aws_cdk import Stack
from cdk_nag import NagPackSuppression, NagSuppressions

REASONS = {
    "AwsSolutions-APIG2": "Requests are validated in the controller against the routes' OpenAPI types "
    "(Powertools, openapi.json) and refused with a 4xx; the proxy integration has no per-method "
    "models for API Gateway to check.",
    "AwsSolutions-APIG3": "No WAF: every request is authenticated by an API key checked in the controller "
    "and the stage is throttled; a web ACL would add a fixed monthly cost to each deployment.",
    "AwsSolutions-APIG4": "The API authorizes in the controller: each request carries a HyCloud API key "
    "(stored hashed in DynamoDB) that maps to a user, checked before any route runs.",
    "AwsSolutions-COG4": "HyCloud users are not Cognito users: they hold API keys managed with "
    "`hycloud admin`, checked by the controller.",
    "AwsSolutions-IAM4": "AWSLambdaBasicExecutionRole and AWSLambdaVPCAccessExecutionRole are the "
    "minimal AWS managed policies for a function in a VPC that writes logs; "
    "AmazonAPIGatewayPushToCloudWatchLogs is API Gateway's own logging role.",
    "AwsSolutions-IAM5": "Wildcards come from CDK grants scoped to one resource: objects of the one "
    "content bucket (`<bucket>/*`, `s3:GetObject*`...), versions of the functions a state machine "
    "invokes (`<fn>:*`) and executions of the state machines the controller runs; `Resource::*` only "
    "for X-Ray and VPC network-interface actions, which take no resource.",
    "AwsSolutions-L1": "Functions and the core layer are built for and tested on python3.12, the runtime "
    "the local cloud runs; moving to a newer runtime is a deliberate upgrade.",
    "AwsSolutions-S1": "The content bucket is only reached through presigned URLs that the controller "
    "issues per request and logs (user, route, correlation id); server access logs would need a "
    "second bucket holding one object per request.",
    "AwsSolutions-VPC7": "The VPC has isolated subnets only and no internet path (S3 and DynamoDB gateway "
    "endpoints, one Step Functions interface endpoint); flow logs would record endpoint traffic only.",
    "CdkNagValidationFailure": "EC23 cannot evaluate the interface endpoint's security group, whose "
    "ingress CIDR is the VPC's own CIDR (an intrinsic); it admits traffic from the VPC only.",
}


def suppress_accepted_findings(stack: Stack) -> None:
    NagSuppressions.add_stack_suppressions(
        stack, [NagPackSuppression(id=rule, reason=reason) for rule, reason in REASONS.items()]
    )
