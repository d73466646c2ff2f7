"""The REST API (API Gateway v1) proxying every request to the controller function."""

from aws_cdk import RemovalPolicy
from aws_cdk import aws_apigateway as apigw
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

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
        )
