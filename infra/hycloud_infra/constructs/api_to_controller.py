"""The REST API (API Gateway v1) proxying every request to the controller function."""

from aws_cdk import aws_apigateway as apigw
from aws_cdk import aws_lambda as lambda_
from constructs import Construct


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
        )
