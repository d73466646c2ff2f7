"""The local cloud's REST APIs answer as API Gateway does at its limits, and the app fits them.

A probe function of the test's own behind a REST API of its own (Lambda proxy, binary media type
as the app's) notes in S3 that it was invoked and, after sleeping as asked, that it finished. A
body over 10 MiB, or one that makes the event larger than Lambda's 6 MB, is answered 413 with
the function never invoked; a request the function holds past 29 s is answered 504 while the
function runs on to its end. The app's own API refuses the same bodies and stores nothing.
(infra/local/lambda_executor/hycloud_local_lambda/apigw_limits.py, docs/LOCAL_CLOUD_RULES.md)
"""

from __future__ import annotations

import json
import os
import sys
import time
import uuid

import pytest
import requests

from hycloud_core import api_limits
from infra.local import deploy as local
from tests.lambda_probes import delete_bucket, delete_role, proxy_api, zip_bytes

sys.path.insert(0, str(local.ROOT / "infra/local/lambda_executor"))
from hycloud_local_lambda import guard  # noqa: E402

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

HANDLER = """
import json, os, time, boto3

def handler(event, context):
    query = event.get("queryStringParameters") or {}
    probe, s3 = query.get("id", "none"), boto3.client("s3")
    s3.put_object(Bucket=os.environ["BUCKET"], Key=f"invoked/{probe}", Body=b"1")
    time.sleep(float(query.get("sleep", 0)))
    s3.put_object(Bucket=os.environ["BUCKET"], Key=f"done/{probe}", Body=b"1")
    return {"statusCode": 200, "body": json.dumps({"id": probe, "body": len(event.get("body") or "")})}
"""
TRUST = {
    "Version": "2012-10-17",
    "Statement": [
        {"Effect": "Allow", "Principal": {"Service": "lambda.amazonaws.com"}, "Action": "sts:AssumeRole"}
    ],
}
OCTET = {"Content-Type": "application/octet-stream"}
MiB = 1024 * 1024


@pytest.fixture(scope="module", autouse=True)
def limits_enforced():
    modes = guard.parse_modes(guard.settings_text(str(local.STATE)))
    if os.environ.get("HYCLOUD_LOCAL_ENFORCE") is None and modes["limits"] != "on":
        pytest.skip(f"the local cloud's limits are {modes['limits']} (HYCLOUD_LOCAL_ENFORCE)")
    log = (local.STATE / "localstack.log").read_text(errors="replace")
    assert "API Gateway limits applied" in log, (
        "the running LocalStack has not loaded apigw_limits.py (started before it was installed?): "
        "restart the local cloud (infra/local/localcloud.py stop, then start)"
    )


@pytest.fixture(scope="module")
def probe(deployment):
    """The probe function behind a REST API: {"url", "s3", "bucket"}."""
    iam, s3, lam = deployment.client("iam"), deployment.client("s3"), deployment.client("lambda")
    apigw = deployment.client("apigateway")
    tag = uuid.uuid4().hex[:8]
    name = bucket = f"api-limits-{tag}"
    s3.create_bucket(Bucket=bucket)
    role = iam.create_role(RoleName=name, AssumeRolePolicyDocument=json.dumps(TRUST))["Role"]["Arn"]
    policy = {
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Action": "s3:PutObject", "Resource": f"arn:aws:s3:::{bucket}/*"}],
    }
    iam.put_role_policy(RoleName=name, PolicyName="notes", PolicyDocument=json.dumps(policy))
    function = lam.create_function(
        FunctionName=name,
        Runtime="python3.12",
        Role=role,
        Handler="handler.handler",
        Code={"ZipFile": zip_bytes({"handler.py": HANDLER})},
        Timeout=45,
        Environment={"Variables": {"BUCKET": bucket}},
    )["FunctionArn"]
    lam.get_waiter("function_active_v2").wait(FunctionName=name)
    api = proxy_api(
        apigw,
        function,
        "v1",
        name=name,
        binaryMediaTypes=["application/octet-stream"],
        endpointConfiguration={"types": ["REGIONAL"]},
    )
    url = f"{deployment.env['AWS_ENDPOINT_URL']}/restapis/{api}/v1/_user_request_/probe"
    try:
        yield {"url": url, "s3": s3, "bucket": bucket}
    finally:
        apigw.delete_rest_api(restApiId=api)
        lam.delete_function(FunctionName=name)
        delete_role(iam, name, "notes")
        delete_bucket(s3, bucket)


def noted(probe, key: str) -> bool:
    return probe["s3"].list_objects_v2(Bucket=probe["bucket"], Prefix=key).get("KeyCount", 0) > 0


def call(probe, method: str = "POST", **kwargs) -> tuple[str, requests.Response]:
    probe_id = uuid.uuid4().hex[:12]
    params = {"id": probe_id, **kwargs.pop("params", {})}
    return probe_id, requests.request(method, probe["url"], params=params, timeout=90, **kwargs)


def test_a_body_within_the_limits_reaches_the_function(probe):
    probe_id, answer = call(probe, data=b"\0" * (4 * MiB), headers=OCTET)
    assert answer.status_code == 200 and answer.json()["id"] == probe_id
    assert noted(probe, f"invoked/{probe_id}") and noted(probe, f"done/{probe_id}")


def test_a_body_over_10_mib_is_answered_413_and_the_function_never_runs(probe):
    probe_id, answer = call(probe, data=b"\0" * (11 * 1000 * 1000), headers=OCTET)
    assert answer.status_code == 413
    assert answer.text == f"HTTP content length exceeded {api_limits.GATEWAY_BODY_LIMIT} bytes."
    assert not noted(probe, f"invoked/{probe_id}")


def test_an_event_over_lambdas_6_mb_is_answered_request_too_long_and_never_runs(probe):
    probe_id, answer = call(probe, data=os.urandom(5 * MiB), headers=OCTET)  # 6.7 MiB base64
    assert answer.status_code == 413 and answer.json() == {"message": "Request Too Long"}
    assert answer.headers["x-amzn-ErrorType"] == "BadRequestException"
    assert not noted(probe, f"invoked/{probe_id}")


def test_a_request_held_past_29_s_is_answered_504_and_the_function_runs_on(probe):
    started = time.monotonic()
    probe_id, answer = call(probe, "GET", params={"sleep": 34})
    took = time.monotonic() - started
    assert answer.status_code == 504 and answer.json() == {"message": "Endpoint request timed out"}
    assert api_limits.GATEWAY_TIMEOUT_S <= took < api_limits.GATEWAY_TIMEOUT_S + 3
    assert noted(probe, f"invoked/{probe_id}") and not noted(probe, f"done/{probe_id}")
    deadline = time.monotonic() + 20
    while not noted(probe, f"done/{probe_id}") and time.monotonic() < deadline:
        time.sleep(0.5)
    assert noted(probe, f"done/{probe_id}"), "the function did not run on after API Gateway's 504"


@pytest.mark.parametrize(
    "size,said", [(11 * 1000 * 1000, "HTTP content length"), (5 * MiB, "Request Too Long")]
)
def test_the_apps_api_refuses_an_oversize_body_and_stores_nothing(alice, size, said):
    api = alice.api()
    path = f"/api-limits/{uuid.uuid4().hex[:8]}.bin"
    answer = api.call(
        "PUT", "/v1/files", params={"path": path, "parents": "true"}, data=os.urandom(size), headers=OCTET
    )
    assert answer.status_code == 413 and said in answer.text
    assert api.call("GET", "/v1/stat", params={"path": path}).status_code == 404


def test_the_client_reports_the_refusal_and_sends_no_body_that_cannot_fit(alice):
    from hycloud.http import Http
    from hycloud_core.errors import HyCloudError

    http = Http(alice.deployment.api_url, alice.key)
    for size in (11 * 1000 * 1000, 5 * MiB):
        with pytest.raises(HyCloudError) as err:
            http.request("PUT", "/v1/files", params={"path": "/x.bin"}, data=b"\0" * size, headers=OCTET)
        assert err.value.status == 413 and err.value.code == "request-too-large"
