"""LocalStack extension that runs Python Lambda functions as local processes.

Loaded by LocalStack through the ``localstack.lambda.runtime_executor`` and
``localstack.hooks.on_infra_start`` entry points; see ``plugins.py``.
"""
