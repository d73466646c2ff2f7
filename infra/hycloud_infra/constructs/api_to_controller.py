"""The REST API (API Gateway v1) proxying every request to the controller function.

CORS: API Gateway answers preflight OPTIONS itself (no Lambda call), and its own error answers
(throttled, unknown route before the proxy) carry the CORS header too, so a browser app on
another origin can read every answer; the controller adds the same headers to its own answers.
"""

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_apigateway as apigw
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from hycloud_core import cors

from .python_function import log_retention


class ApiToController(Construct):
    def __init__(self, scope: Construct, id: str, *, controller: lambda_.IFunction) -> None:
        super().__init__(scope, id)
        access_log = logs.LogGroup(
            self, "AccessLog", retention=log_retention(self), removal_policy=RemovalPolicy.DESTROY
        )
        self.api = apigw.LambdaRestApi(
            self,
            "Api",
            handler=controller,
            proxy=True,
            binary_media_types=["application/octet-stream"],
            deploy_options=apigw.StageOptions(
                stage_name="v1",
                throttling_rate_limit=500,
                throttling_burst_limit=1000,
                access_log_destination=apigw.LogGroupLogDestination(access_log),
                access_log_format=apigw.AccessLogFormat.json_with_standard_fields(
                    caller=False,
                    http_method=True,
                    ip=True,
                    protocol=True,
                    request_time=True,
                    resource_path=True,
                    response_length=True,
                    status=True,
                    user=False,
                ),
                logging_level=apigw.MethodLoggingLevel.ERROR,
            ),
            cloud_watch_role=True,  # API Gateway needs it, once per account and region, to write logs
            endpoint_types=[apigw.EndpointType.REGIONAL],
            retain_deployments=True,  # the local cloud drops the stage when a replaced deployment is deleted
            default_cors_preflight_options=apigw.CorsOptions(
                allow_origins=apigw.Cors.ALL_ORIGINS,
                allow_methods=apigw.Cors.ALL_METHODS,
                allow_headers=list(cors.ALLOW_HEADERS),
                max_age=Duration.seconds(cors.MAX_AGE_S),
            ),
        )
        for kind in (apigw.ResponseType.DEFAULT_4_XX, apigw.ResponseType.DEFAULT_5_XX):
            self.api.add_gateway_response(
                f"Cors{kind.response_type}",
                type=kind,
                response_headers={"Access-Control-Allow-Origin": "'*'"},
            )
