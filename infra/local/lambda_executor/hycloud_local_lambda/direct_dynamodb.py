"""The local cloud's functions send DynamoDB calls straight to DynamoDB Local, not through LocalStack.

LocalStack answers DynamoDB by parsing each request, forwarding it to DynamoDB Local (its engine
for DynamoDB) and parsing and serializing the answer again, all in its one Python process, which
also serves API Gateway, Lambda, S3 and Step Functions. Under test load that process is the local
cloud's bottleneck, and a controller request makes 3 to 30 DynamoDB calls. For the data-plane
calls functions make, LocalStack adds nothing but that round trip (DynamoDB Local answers them
itself); what it adds, namespacing tables by account and region, is one header: DynamoDB Local
keeps a database per access key, and LocalStack signs with `<account><region>` as the key. This
module does the same in the function's process: DynamoDB clients get DynamoDB Local's URL
(`AWS_ENDPOINT_URL_DYNAMODB`) and their signature that key. Tests and deployments still reach
DynamoDB through LocalStack; both see the same tables. The AWS rules (guard.py) are checked before
the call leaves the function, whatever its endpoint.

Standard library and botocore only: loaded by the runtime (bootstrap.py) before the handler.
"""

from __future__ import annotations

import json
import os
import re

ENV = "HYCLOUD_LOCAL_DYNAMODB"  # {"url": DynamoDB Local's, "account": the function's}, set by executor.py
_CREDENTIAL = re.compile(r"Credential=[^/]+/")


def namespace_key(account: str, region: str) -> str:
    """The access key LocalStack signs DynamoDB Local requests with for an account and region."""
    return f"{account}{region}".replace("-", "")


def install() -> bool:
    """Point DynamoDB clients at DynamoDB Local when the executor said where it is."""
    spec = os.environ.get(ENV)
    if not spec:
        return False
    try:
        import botocore.auth
    except ImportError:  # a function without botocore makes no DynamoDB calls
        return False
    target = json.loads(spec)
    os.environ["AWS_ENDPOINT_URL_DYNAMODB"] = target["url"]
    account, sign = target["account"], botocore.auth.SigV4Auth.add_auth

    def add_auth(self, request) -> None:
        sign(self, request)
        if self._service_name != "dynamodb":
            return
        key = namespace_key(account, self._region_name)
        header = _CREDENTIAL.sub(f"Credential={key}/", request.headers["Authorization"], count=1)
        del request.headers["Authorization"]
        request.headers["Authorization"] = header

    botocore.auth.SigV4Auth.add_auth = add_auth
    return True
