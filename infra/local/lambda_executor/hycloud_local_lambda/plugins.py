"""Entry points LocalStack loads: the runtime executor and the EFS-config hook.

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
