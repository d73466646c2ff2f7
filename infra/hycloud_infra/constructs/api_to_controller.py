"""The REST API (API Gateway v1) proxying every request to the controller function.

CORS: API Gateway answers preflight OPTIONS itself (no Lambda call), and its own error answers
(throttled, unknown route before the proxy) carry the CORS header too, so a browser app on
another origin can read every answer; the controller adds the same headers to its own answers.
"""

from aws_cdk import Duration
from aws_cdk import aws_apigateway as apigw
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from hycloud_core import cors


class ApiToController(Construct):
    def __init__(self, scope: Construct, id: str, *, controller: lambda_.IFunction) -> None:
        super().__init__(scope, id)
        self.api = apigw.LambdaRestApi(
            self,
            "Api",
            handler=controller,
            proxy=True,
            binary_media_types=["application/octet-stream"],
            deploy_options=apigw.StageOptions(
                stage_name="v1", throttling_rate_limit=500, throttling_burst_limit=1000
            ),
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
