"""Entry points LocalStack loads: the runtime executor, the EFS-config hook, API Gateway's limits,
Lambda's invocation metrics left out and S3 buckets' lifecycle rules put.

Imports of LocalStack internals stay inside the functions so that merely
listing the plugins does not load the Lambda service.
"""

from localstack.runtime import hooks
from localstack.services.lambda_.invocation.plugins import RuntimeExecutorPlugin


class LocalProcessExecutorPlugin(RuntimeExecutorPlugin):
    name = "local-process"

    def load(self, *args, **kwargs):
        from hycloud_local_lambda.executor import LocalProcessRuntimeExecutor

        return LocalProcessRuntimeExecutor


@hooks.on_infra_start()
def hycloud_keep_file_system_configs() -> None:
    from hycloud_local_lambda import efs

    efs.install_patches()


@hooks.on_infra_start()
def hycloud_api_gateway_limits() -> None:
    """29 s integration timeout, 10 MiB bodies, Lambda's 6 MB events: what AWS's REST APIs answer."""
    from hycloud_local_lambda import apigw_limits

    apigw_limits.install_patches()


@hooks.on_infra_start()
def hycloud_no_lambda_invocation_metrics() -> None:
    """Lambda's Invocations/Errors metrics, which nothing reads, are not sent (lambda_metrics.py)."""
    from hycloud_local_lambda import lambda_metrics

    lambda_metrics.install_patches()


@hooks.on_infra_start()
def hycloud_bucket_lifecycle() -> None:
    """Buckets get their template's lifecycle rules (expiry, tiering): s3_lifecycle.py."""
    from hycloud_local_lambda import s3_lifecycle

    s3_lifecycle.install_patches()
