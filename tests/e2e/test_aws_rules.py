"""The local cloud refuses what AWS refuses: IAM, VPC reachability and payload limits.

A tiny function of the test's own, deployed into the local cloud with a role that allows only
``s3:GetObject`` on one bucket, makes calls its role or its network does not allow; the
function's runtime (infra/local/lambda_executor/hycloud_local_lambda/guard.py) must refuse them
before they reach LocalStack, with the errors AWS gives. Enforcement is switched on in the
function's own environment, whatever the local cloud's default.
"""

from __future__ import annotations

import json
import time
import uuid

import pytest

from infra.local import deploy as local
from tests.lambda_probes import delete_bucket, delete_role, zip_bytes

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

HANDLER = """
import json, boto3, botocore.exceptions

def handler(event, context):
    op = event["op"]
    try:
        if op == "get":
            body = boto3.client("s3").get_object(Bucket=event["bucket"], Key=event["key"])["Body"].read()
            return {"ok": True, "body": body.decode()}
        if op == "put":
            boto3.client("s3").put_object(Bucket=event["bucket"], Key=event["key"], Body=b"x")
        elif op == "list_other_region":
            boto3.client("s3", region_name=event["region"]).list_buckets()
        elif op == "invoke":
            boto3.client("lambda").invoke(FunctionName=event["function"], Payload=b"{}")
        elif op == "start":
            boto3.client("stepfunctions").start_execution(stateMachineArn=event["arn"], input=event["input"])
        elif op == "big":
            return "x" * (7 * 1024 * 1024)
        return {"ok": True}
    except botocore.exceptions.ClientError as e:
        return {"ok": False, "code": e.response["Error"]["Code"], "message": e.response["Error"]["Message"],
                "status": e.response["ResponseMetadata"].get("HTTPStatusCode")}
    except botocore.exceptions.EndpointConnectionError as e:
        return {"ok": False, "code": type(e).__name__, "connect_timeout":
                isinstance(e, botocore.exceptions.ConnectTimeoutError), "message": str(e)}
"""

TRUST = {
    "Version": "2012-10-17",
    "Statement": [
        {"Effect": "Allow", "Principal": {"Service": "lambda.amazonaws.com"}, "Action": "sts:AssumeRole"}
    ],
}


@pytest.fixture(scope="module")
def probe(deployment):
    """A bucket with one object, a role allowing only GetObject on it, and two functions (VPC, none)."""
    iam, s3, lam = deployment.client("iam"), deployment.client("s3"), deployment.client("lambda")
    tag = uuid.uuid4().hex[:8]
    bucket, role_name = f"aws-rules-{tag}", f"aws-rules-{tag}"
    s3.create_bucket(Bucket=bucket)
    s3.put_object(Bucket=bucket, Key="readable", Body=b"hello")
    role = iam.create_role(RoleName=role_name, AssumeRolePolicyDocument=json.dumps(TRUST))["Role"]["Arn"]
    policy = {
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Action": "s3:GetObject", "Resource": f"arn:aws:s3:::{bucket}/*"}],
    }
    iam.put_role_policy(RoleName=role_name, PolicyName="get-only", PolicyDocument=json.dumps(policy))
    controller = lam.get_function_configuration(FunctionName=deployment.outputs["ControllerFunctionName"])
    vpc = {k: controller["VpcConfig"][k] for k in ("SubnetIds", "SecurityGroupIds")}
    names = {kind: f"aws-rules-{kind}-{tag}" for kind in ("plain", "vpc", "report")}
    code = zip_bytes({"handler.py": HANDLER})
    for kind, name in names.items():
        lam.create_function(
            FunctionName=name,
            Runtime="python3.12",
            Role=role,
            Handler="handler.handler",
            Code={"ZipFile": code},
            Timeout=30,
            Environment={"Variables": {"HYCLOUD_LOCAL_ENFORCE": "report" if kind == "report" else "on"}},
            **({"VpcConfig": vpc} if kind == "vpc" else {}),
        )
    for name in names.values():
        lam.get_waiter("function_active_v2").wait(FunctionName=name)
    try:
        yield {"bucket": bucket, "functions": names, "lambda": lam, "s3": s3}
    finally:
        for name in names.values():
            lam.delete_function(FunctionName=name)
        delete_role(iam, role_name, "get-only")
        delete_bucket(s3, bucket)


def call(probe, kind: str, event: dict) -> tuple[dict, dict]:
    resp = probe["lambda"].invoke(FunctionName=probe["functions"][kind], Payload=json.dumps(event).encode())
    return resp, json.loads(resp["Payload"].read())


@pytest.mark.parametrize("kind", ["plain", "vpc"])
def test_what_the_role_allows_goes_through(probe, kind):
    _, result = call(probe, kind, {"op": "get", "bucket": probe["bucket"], "key": "readable"})
    assert result == {"ok": True, "body": "hello"}


@pytest.mark.parametrize("kind", ["plain", "vpc"])
def test_an_action_the_role_lacks_is_access_denied_as_on_aws(probe, kind):
    _, result = call(probe, kind, {"op": "put", "bucket": probe["bucket"], "key": "written"})
    assert result["ok"] is False and result["code"] == "AccessDenied" and result["status"] == 403
    function = probe["functions"][kind]
    assert (
        "assumed-role/aws-rules-" in result["message"]
        and f"/{function} is not authorized" in result["message"]
    )
    assert f"s3:PutObject on resource: arn:aws:s3:::{probe['bucket']}/written" in result["message"]
    with pytest.raises(probe["s3"].exceptions.ClientError):  # nothing was written
        probe["s3"].head_object(Bucket=probe["bucket"], Key="written")


def test_a_vpc_function_cannot_reach_another_regions_s3(probe):
    started = time.monotonic()
    _, result = call(probe, "vpc", {"op": "list_other_region", "region": "eu-west-1"})
    assert result["ok"] is False and result["connect_timeout"] is True
    assert "no endpoint for s3 in eu-west-1" in result["message"]
    assert probe["functions"]["vpc"] in result["message"]
    assert time.monotonic() - started < 10  # fails fast instead of hanging


def test_a_vpc_function_cannot_reach_a_service_without_an_endpoint(probe):
    """The app's VPC has no Step Functions endpoint (its functions start jobs through the reach
    function); Lambda, which has one, answers (here: AccessDenied, the role may not invoke)."""
    arn = "arn:aws:states:us-east-1:000000000000:stateMachine:nothing"
    _, result = call(probe, "vpc", {"op": "start", "arn": arn, "input": "{}"})
    assert result["ok"] is False and result["connect_timeout"] is True
    assert "no endpoint for states in us-east-1" in result["message"]
    _, result = call(probe, "vpc", {"op": "invoke", "function": probe["functions"]["plain"]})
    assert result["ok"] is False and result["code"] == "AccessDeniedException"


def test_a_function_outside_a_vpc_reaches_every_region_but_iam_still_applies(probe):
    _, result = call(probe, "plain", {"op": "list_other_region", "region": "eu-west-1"})
    assert result["ok"] is False and result["code"] == "AccessDenied"
    assert "s3:ListAllMyBuckets" in result["message"]


def test_a_response_over_six_megabytes_fails_as_on_aws(probe):
    resp, result = call(probe, "plain", {"op": "big"})
    assert resp.get("FunctionError") and result["errorType"] == "Function.ResponseSizeTooLarge"


def test_a_step_functions_input_over_256_kib_is_refused(probe):
    arn = "arn:aws:states:us-east-1:000000000000:stateMachine:nothing"
    _, result = call(probe, "plain", {"op": "start", "arn": arn, "input": json.dumps("x" * 300_000)})
    assert result["ok"] is False and result["code"] == "InvalidExecutionInput"


def test_a_missing_key_without_list_bucket_is_access_denied_not_absent(probe):
    """AWS hides whether a key exists from a caller that may not list the bucket."""
    _, result = call(probe, "plain", {"op": "get", "bucket": probe["bucket"], "key": "missing"})
    assert result["ok"] is False and result["code"] == "AccessDenied" and result["status"] == 403
    assert f"s3:ListBucket on resource: arn:aws:s3:::{probe['bucket']} " in result["message"]


def test_report_mode_lets_the_call_through_and_logs_the_refusal(probe):
    """The switch for debugging: the call reaches the local cloud, the refusal is still counted."""
    _, result = call(probe, "report", {"op": "put", "bucket": probe["bucket"], "key": "reported"})
    assert result == {"ok": True}
    assert probe["s3"].get_object(Bucket=probe["bucket"], Key="reported")["Body"].read() == b"x"
    log = (local.STATE / "guard" / "refused.jsonl").read_text().splitlines()
    mine = [json.loads(line) for line in log if probe["functions"]["report"] in line]
    assert any(r["action"] == "s3:PutObject" and r["enforced"] is False for r in mine)
