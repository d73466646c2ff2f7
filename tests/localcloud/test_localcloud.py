"""The local cloud end to end: services, the Lambda executor, EFS mapping, stop.

Run alone with ``pytest tests/localcloud -m localcloud``; deselect elsewhere with
``-m "not localcloud"``. Starts the local cloud when it is not running (and
stops it again at the end); the last test stops it and checks no process is left.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import boto3
import pytest

from tests.lambda_probes import proxy_api, zip_bytes

pytestmark = [pytest.mark.localcloud, pytest.mark.slow, pytest.mark.exclusive]

ROOT = Path(__file__).resolve().parents[2]
CLI = ROOT / "infra" / "local" / "localcloud.py"
STATE = ROOT / ".localcloud"
ROLE = "arn:aws:iam::000000000000:role/lambda-role"
MOUNT = "/mnt/efs"

HANDLER = """
import json, os, time
import boto3
import layer_greeting

def handler(event, context):
    time.sleep(event.get("sleep", 0))
    marker = event.get("marker", "none")
    with open(os.path.join(os.environ["DATA_DIR"], marker + ".txt"), "w") as f:
        f.write(context.aws_request_id)
    buckets = [b["Name"] for b in boto3.client("s3").list_buckets()["Buckets"]]
    keys = ["AWS_REGION", "AWS_DEFAULT_REGION", "AWS_ENDPOINT_URL", "AWS_LAMBDA_FUNCTION_NAME",
            "AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "_HANDLER", "LAMBDA_TASK_ROOT", "APP_SETTING"]
    return {
        "greeting": layer_greeting.greet("efs"),
        "env": {k: os.environ.get(k) for k in keys},
        "request_id": context.aws_request_id,
        "pid": os.getpid(),
        "buckets": buckets,
        "efs_listing": sorted(os.listdir(os.environ["DATA_DIR"])),
        "remaining_ms": context.get_remaining_time_in_millis(),
    }
"""

LAYER_MODULE = "def greet(who):\n    return 'hello ' + who + ' from the layer'\n"

PROXY_HANDLER = """
import json

def handler(event, context):
    return {"statusCode": 201, "headers": {"content-type": "application/json"},
            "body": json.dumps({"path": event["path"], "method": event["httpMethod"],
                                "query": event.get("queryStringParameters")})}
"""

DOUBLE_HANDLER = "def handler(event, context):\n    return {'doubled': event['n'] * 2}\n"


def localcloud(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(CLI), *args], capture_output=True, text=True, check=check)


def is_running() -> bool:
    return localcloud("status", check=False).returncode == 0


def efs_map() -> dict[str, str]:
    return json.loads((STATE / "efs" / "map.json").read_text())


def marked_pids() -> list[int]:
    marker = f"HYCLOUD_LOCALCLOUD={STATE}".encode()
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker in (entry / "environ").read_bytes().split(b"\0"):
                    pids.append(int(entry.name))
            except OSError:
                pass
    return pids


@pytest.fixture(scope="module")
def cloud():
    """Client settings of a running local cloud; stops it at the end if this module started it."""
    started = not is_running()
    if started:
        result = localcloud("start", check=False)
        assert result.returncode == 0, result.stdout + result.stderr
    yield json.loads(localcloud("env", "--json").stdout)
    if started and is_running():
        localcloud("stop")


@pytest.fixture(scope="module")
def aws(cloud):
    def client(service: str):
        return boto3.client(
            service,
            endpoint_url=cloud["AWS_ENDPOINT_URL"],
            region_name=cloud["AWS_DEFAULT_REGION"],
            aws_access_key_id=cloud["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=cloud["AWS_SECRET_ACCESS_KEY"],
        )

    return client


@pytest.fixture
def name() -> str:
    return f"lc-{uuid.uuid4().hex[:10]}"


def create_function(aws, fn_name: str, code: str, **extra) -> str:
    lam = aws("lambda")
    arn = lam.create_function(
        FunctionName=fn_name,
        Runtime="python3.12",
        Handler="app.handler",
        Role=ROLE,
        Code={"ZipFile": zip_bytes({"app.py": code})},
        **extra,
    )["FunctionArn"]
    lam.get_waiter("function_active_v2").wait(FunctionName=fn_name)
    return arn


def invoke(aws, fn_name: str, event: dict) -> tuple[dict, str | None]:
    resp = aws("lambda").invoke(FunctionName=fn_name, Payload=json.dumps(event).encode())
    return json.loads(resp["Payload"].read()), resp.get("FunctionError")


@pytest.fixture(scope="module")
def efs_function(aws):
    """A function with a layer, an environment and an EFS access point at /mnt/efs."""
    suffix = uuid.uuid4().hex[:10]
    layer = aws("lambda").publish_layer_version(
        LayerName=f"lc-layer-{suffix}",
        Content={"ZipFile": zip_bytes({"python/layer_greeting.py": LAYER_MODULE})},
        CompatibleRuntimes=["python3.12"],
    )
    ap_arn = f"arn:aws:elasticfilesystem:us-east-1:000000000000:access-point/fsap-{suffix}0000000"
    fn_name = f"lc-efs-{suffix}"
    create_function(
        aws,
        fn_name,
        HANDLER,
        Timeout=10,
        Layers=[layer["LayerVersionArn"]],
        Environment={"Variables": {"APP_SETTING": "on", "DATA_DIR": MOUNT}},
        FileSystemConfigs=[{"Arn": ap_arn, "LocalMountPath": MOUNT}],
    )
    return fn_name, ap_arn


def test_s3_put_get(aws, name):
    s3 = aws("s3")
    s3.create_bucket(Bucket=name)
    body = os.urandom(300_000)
    s3.put_object(Bucket=name, Key="dir/blob.bin", Body=body)
    assert s3.get_object(Bucket=name, Key="dir/blob.bin")["Body"].read() == body


def test_dynamodb_through_localstack(aws, name):
    ddb = aws("dynamodb")
    ddb.create_table(
        TableName=name,
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        AttributeDefinitions=[
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "sk", "AttributeType": "N"},
        ],
        BillingMode="PAY_PER_REQUEST",
    )
    ddb.get_waiter("table_exists").wait(TableName=name)
    ddb.put_item(TableName=name, Item={"pk": {"S": "file"}, "sk": {"N": "7"}, "size": {"N": "1024"}})
    item = ddb.get_item(TableName=name, Key={"pk": {"S": "file"}, "sk": {"N": "7"}})["Item"]
    assert item == {"pk": {"S": "file"}, "sk": {"N": "7"}, "size": {"N": "1024"}}


def test_lambda_with_layer_env_and_efs(aws, cloud, efs_function, name):
    fn_name, ap_arn = efs_function
    aws("s3").create_bucket(Bucket=name)
    out, error = invoke(aws, fn_name, {"marker": name})
    assert error is None, out
    assert out["greeting"] == "hello efs from the layer"
    env = out["env"]
    assert env["APP_SETTING"] == "on"
    assert env["AWS_REGION"] == env["AWS_DEFAULT_REGION"] == "us-east-1"
    assert env["AWS_ENDPOINT_URL"] == cloud["AWS_ENDPOINT_URL"]
    assert env["AWS_LAMBDA_FUNCTION_NAME"] == fn_name
    assert env["AWS_LAMBDA_FUNCTION_MEMORY_SIZE"] == "128"
    assert env["_HANDLER"] == "app.handler"
    assert Path(env["LAMBDA_TASK_ROOT"], "app.py").is_file()
    assert name in out["buckets"]  # boto3 inside the function reaches the local cloud
    assert 0 < out["remaining_ms"] <= 10_000
    # the file written to /mnt/efs is in the access point's folder, and only there
    folder = Path(efs_map()[ap_arn])
    assert folder == STATE / "efs" / ap_arn.rsplit("/", 1)[1]
    assert (folder / f"{name}.txt").read_text() == out["request_id"]
    assert f"{name}.txt" in out["efs_listing"]
    assert not Path(MOUNT, f"{name}.txt").exists()
    config = aws("lambda").get_function_configuration(FunctionName=fn_name)
    assert config["FileSystemConfigs"] == [{"Arn": ap_arn, "LocalMountPath": MOUNT}]


def test_lambda_error_and_logs(aws, name):
    code = "def handler(event, context):\n    print('about to fail')\n    raise ValueError('bad input ' + event['x'])\n"
    create_function(aws, name, code)
    resp = aws("lambda").invoke(FunctionName=name, Payload=b'{"x": "42"}', LogType="Tail")
    out = json.loads(resp["Payload"].read())
    assert resp["FunctionError"] == "Unhandled"
    assert out["errorType"] == "ValueError"
    assert out["errorMessage"] == "bad input 42"
    import base64

    logs = base64.b64decode(resp["LogResult"]).decode()
    assert "about to fail" in logs and "START RequestId" in logs and "REPORT RequestId" in logs


def test_lambda_init_errors_are_reported(aws, name):
    create_function(aws, name, "import not_a_module\n\ndef handler(event, context):\n    return 1\n")
    out, error = invoke(aws, name, {})
    assert error == "Unhandled"
    assert out["errorType"] == "Runtime.ImportModuleError"
    assert out["errorMessage"] == "Unable to import module 'app': No module named 'not_a_module'"
    create_function(aws, name + "-h", "def other(event, context):\n    return 1\n")
    out, error = invoke(aws, name + "-h", {})
    assert (error, out["errorType"]) == ("Unhandled", "Runtime.HandlerNotFound")


def test_lambda_timeout_then_recovers(aws, name):
    code = "import time\ndef handler(event, context):\n    time.sleep(event['sleep'])\n    return 'done'\n"
    create_function(aws, name, code, Timeout=1)
    t0 = time.monotonic()
    out, error = invoke(aws, name, {"sleep": 5})
    assert time.monotonic() - t0 < 4
    assert error == "Unhandled"
    assert "Task timed out after 1.00 seconds" in out["errorMessage"]
    out, error = invoke(aws, name, {"sleep": 0})  # a fresh runtime replaces the killed one
    assert (out, error) == ("done", None)


def test_a_timed_out_invocation_logs_where_its_threads_were(aws, name):
    """AWS says only "Task timed out"; here the log also shows where the function waited."""
    code = "import time\ndef handler(event, context):\n    time.sleep(5)\n    return 'done'\n"
    create_function(aws, name, code, Timeout=1)
    resp = aws("lambda").invoke(FunctionName=name, Payload=b"{}", LogType="Tail")
    import base64

    logs = base64.b64decode(resp["LogResult"]).decode()
    assert resp["FunctionError"] == "Unhandled"
    assert "Task timed out after 1.00 seconds" in logs
    assert 'app.py", line 3 in handler' in logs, logs


def test_concurrent_invokes_use_separate_environments(aws, efs_function):
    fn_name, _ = efs_function
    invoke(aws, fn_name, {})  # warm one environment
    with ThreadPoolExecutor(2) as pool:
        results = list(pool.map(lambda m: invoke(aws, fn_name, {"sleep": 1.5, "marker": m}), ["c1", "c2"]))
    assert [err for _, err in results] == [None, None]
    assert len({out["pid"] for out, _ in results}) == 2
    assert {"c1.txt", "c2.txt"} <= set(os.listdir(efs_map()[efs_function[1]]))


def test_rest_api_lambda_proxy(aws, cloud, name):
    fn_arn = create_function(aws, name, PROXY_HANDLER)
    api_id = proxy_api(aws("apigateway"), fn_arn, "dev", name=name)
    url = f"{cloud['AWS_ENDPOINT_URL']}/restapis/{api_id}/dev/_user_request_/files/a/b.txt?v=1"
    with urllib.request.urlopen(urllib.request.Request(url, method="GET"), timeout=30) as resp:
        assert resp.status == 201
        body = json.loads(resp.read())
    assert body == {"path": "/files/a/b.txt", "method": "GET", "query": {"v": "1"}}
    # the newer form of the same endpoint
    url = f"{cloud['AWS_ENDPOINT_URL']}/_aws/execute-api/{api_id}/dev/files/c?v=2"
    with urllib.request.urlopen(urllib.request.Request(url, method="POST", data=b"x"), timeout=30) as resp:
        assert json.loads(resp.read()) == {"path": "/files/c", "method": "POST", "query": {"v": "2"}}


def test_step_functions_invokes_lambda(aws, name):
    fn_arn = create_function(aws, name, DOUBLE_HANDLER)
    definition = {
        "StartAt": "Double",
        "States": {
            "Double": {
                "Type": "Task",
                "Resource": "arn:aws:states:::lambda:invoke",
                "Parameters": {"FunctionName": fn_arn, "Payload.$": "$"},
                "OutputPath": "$.Payload",
                "End": True,
            }
        },
    }
    sfn = aws("stepfunctions")
    sm_arn = sfn.create_state_machine(name=name, definition=json.dumps(definition), roleArn=ROLE)[
        "stateMachineArn"
    ]
    exec_arn = sfn.start_execution(stateMachineArn=sm_arn, input=json.dumps({"n": 21}))["executionArn"]
    deadline = time.monotonic() + 60
    while (desc := sfn.describe_execution(executionArn=exec_arn))["status"] == "RUNNING":
        assert time.monotonic() < deadline
        time.sleep(0.3)
    assert desc["status"] == "SUCCEEDED"
    assert json.loads(desc["output"]) == {"doubled": 42}


SINK_HANDLER = """
import json, os, uuid
import boto3

def handler(event, context):
    records = event.get("Records") or [event]
    s3 = boto3.client("s3")
    for record in records:
        if "body" in record:
            key, body = "sqs/" + record["body"], record["body"]
        elif "dynamodb" in record:
            key, body = "ddb/" + record["dynamodb"]["Keys"]["pk"]["S"], record["eventName"]
        else:
            key, body = "async/" + record["tag"], record["tag"]
        s3.put_object(Bucket=os.environ["BUCKET"], Key=key, Body=body.encode())
"""


def wait_for_keys(aws, bucket: str, expected: set[str], timeout: float = 60) -> set[str]:
    deadline = time.monotonic() + timeout
    while True:
        found = {o["Key"] for o in aws("s3").list_objects_v2(Bucket=bucket).get("Contents", [])}
        if expected <= found or time.monotonic() > deadline:
            return found
        time.sleep(0.5)


def test_async_invoke_and_event_sources(aws, name):
    """Async invoke, an SQS queue and a DynamoDB stream each drive the same function."""
    aws("s3").create_bucket(Bucket=name)
    fn_arn = create_function(aws, name, SINK_HANDLER, Environment={"Variables": {"BUCKET": name}})
    lam, sqs, ddb = aws("lambda"), aws("sqs"), aws("dynamodb")
    lam.invoke(FunctionName=name, InvocationType="Event", Payload=json.dumps({"tag": "a1"}).encode())

    queue_url = sqs.create_queue(QueueName=name)["QueueUrl"]
    queue_arn = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    lam.create_event_source_mapping(FunctionName=fn_arn, EventSourceArn=queue_arn, BatchSize=10)
    for body in ("m1", "m2"):
        sqs.send_message(QueueUrl=queue_url, MessageBody=body)

    stream_arn = ddb.create_table(
        TableName=name,
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
        StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_IMAGE"},
    )["TableDescription"]["LatestStreamArn"]
    ddb.get_waiter("table_exists").wait(TableName=name)
    streams = aws("dynamodbstreams")
    deadline = time.monotonic() + 30
    while streams.describe_stream(StreamArn=stream_arn)["StreamDescription"]["StreamStatus"] != "ENABLED":
        assert time.monotonic() < deadline
        time.sleep(0.5)
    mapping = lam.create_event_source_mapping(
        FunctionName=fn_arn, EventSourceArn=stream_arn, StartingPosition="TRIM_HORIZON"
    )
    deadline = time.monotonic() + 30
    while lam.get_event_source_mapping(UUID=mapping["UUID"])["State"] != "Enabled":
        assert time.monotonic() < deadline
        time.sleep(0.5)
    ddb.put_item(TableName=name, Item={"pk": {"S": "k1"}})

    expected = {"async/a1", "sqs/m1", "sqs/m2", "ddb/k1"}
    assert wait_for_keys(aws, name, expected) == expected
    assert aws("s3").get_object(Bucket=name, Key="ddb/k1")["Body"].read() == b"INSERT"


def cfn_template(code: str) -> dict:
    ap_arn = {
        "Fn::Join": [
            "",
            [
                "arn:",
                {"Ref": "AWS::Partition"},
                ":elasticfilesystem:",
                {"Ref": "AWS::Region"},
                ":",
                {"Ref": "AWS::AccountId"},
                ":access-point/",
                {"Ref": "AccessPoint"},
            ],
        ]
    }
    sg_id = {"Fn::GetAtt": ["FunctionSg", "GroupId"]}
    return {
        "Resources": {
            "Vpc": {"Type": "AWS::EC2::VPC", "Properties": {"CidrBlock": "10.0.0.0/16"}},
            "Subnet": {
                "Type": "AWS::EC2::Subnet",
                "Properties": {"VpcId": {"Ref": "Vpc"}, "CidrBlock": "10.0.1.0/24"},
            },
            "FunctionSg": {
                "Type": "AWS::EC2::SecurityGroup",
                "Properties": {"GroupDescription": "function", "VpcId": {"Ref": "Vpc"}},
            },
            "FileSystem": {"Type": "AWS::EFS::FileSystem", "Properties": {"Encrypted": True}},
            "MountTarget": {
                "Type": "AWS::EFS::MountTarget",
                "Properties": {
                    "FileSystemId": {"Ref": "FileSystem"},
                    "SubnetId": {"Ref": "Subnet"},
                    "SecurityGroups": [sg_id],
                },
            },
            "AccessPoint": {
                "Type": "AWS::EFS::AccessPoint",
                "Properties": {
                    "FileSystemId": {"Ref": "FileSystem"},
                    "PosixUser": {"Uid": "1000", "Gid": "1000"},
                    "RootDirectory": {"Path": "/hycloud"},
                },
            },
            "Role": {
                "Type": "AWS::IAM::Role",
                "Properties": {
                    "AssumeRolePolicyDocument": {
                        "Version": "2012-10-17",
                        "Statement": [
                            {
                                "Effect": "Allow",
                                "Principal": {"Service": "lambda.amazonaws.com"},
                                "Action": "sts:AssumeRole",
                            }
                        ],
                    }
                },
            },
            "Function": {
                "Type": "AWS::Lambda::Function",
                "DependsOn": ["MountTarget"],
                "Properties": {
                    "Runtime": "python3.12",
                    "Handler": "index.handler",
                    "Role": {"Fn::GetAtt": ["Role", "Arn"]},
                    "Code": {"ZipFile": code},
                    "Environment": {"Variables": {"DATA_DIR": MOUNT}},
                    "VpcConfig": {"SubnetIds": [{"Ref": "Subnet"}], "SecurityGroupIds": [sg_id]},
                    "FileSystemConfigs": [{"Arn": ap_arn, "LocalMountPath": MOUNT}],
                },
            },
        },
        "Outputs": {
            "FunctionName": {"Value": {"Ref": "Function"}},
            "AccessPointArn": {"Value": {"Fn::GetAtt": ["AccessPoint", "Arn"]}},
            "AccessPointId": {"Value": {"Ref": "AccessPoint"}},
        },
    }


def test_cloudformation_keeps_file_system_configs(aws, name):
    code = (
        "import os\n"
        "def handler(event, context):\n"
        "    open(os.path.join(os.environ['DATA_DIR'], 'from-cfn.txt'), 'w').write(context.aws_request_id)\n"
        "    return sorted(os.listdir(os.environ['DATA_DIR']))\n"
    )
    cfn = aws("cloudformation")
    cfn.create_stack(StackName=name, TemplateBody=json.dumps(cfn_template(code)))
    cfn.get_waiter("stack_create_complete").wait(
        StackName=name, WaiterConfig={"Delay": 1, "MaxAttempts": 120}
    )
    outputs = {
        o["OutputKey"]: o["OutputValue"] for o in cfn.describe_stacks(StackName=name)["Stacks"][0]["Outputs"]
    }
    ap_arn, ap_id = outputs["AccessPointArn"], outputs["AccessPointId"]
    assert ap_id.startswith("fsap-") and ap_arn.endswith(f":access-point/{ap_id}")
    config = aws("lambda").get_function_configuration(FunctionName=outputs["FunctionName"])
    assert config["FileSystemConfigs"] == [{"Arn": ap_arn, "LocalMountPath": MOUNT}]
    assert config["VpcConfig"]["SubnetIds"]
    resp = aws("lambda").invoke(FunctionName=outputs["FunctionName"], Payload=b"{}")
    assert resp.get("FunctionError") is None
    assert json.loads(resp["Payload"].read()) == ["from-cfn.txt"]
    folder = Path(efs_map()[ap_arn])
    assert folder == STATE / "efs" / ap_id
    assert (folder / "from-cfn.txt").read_text()


def test_cdklocal_available(cloud):
    cdklocal = STATE / "node" / "node_modules" / ".bin" / "cdklocal"
    out = subprocess.run(
        [str(cdklocal), "--version"], capture_output=True, text=True, timeout=60, env={**os.environ, **cloud}
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["cdklocal", "v3.0.4", "cdk", "cli", "version", "v2.1148.1"]


def test_listens_on_loopback_only(aws, efs_function):
    invoke(aws, efs_function[0], {})  # a function process is up
    aws("dynamodb").list_tables()  # DynamoDB Local is up
    ours = set(marked_pids())
    sockets = subprocess.run(["ss", "-ltnpH"], capture_output=True, text=True, check=True).stdout.splitlines()
    mine = [line for line in sockets if any(f"pid={pid}," in line for pid in ours)]
    assert len(mine) >= 3, sockets  # gateway, DynamoDB Local, one function runtime
    for line in mine:
        local = line.split()[3]
        assert local.rsplit(":", 1)[0] in {"127.0.0.1", "[::ffff:127.0.0.1]", "[::1]"}, line


def test_stop_leaves_no_process(aws, efs_function):
    """Runs last in this module: stops the cloud, checks nothing of it survives, restarts if it was up."""
    invoke(aws, efs_function[0], {})
    assert len(marked_pids()) >= 3
    result = localcloud("stop", check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    assert marked_pids() == []
    ps = subprocess.run(["ps", "-eo", "pid,args"], capture_output=True, text=True, check=True).stdout
    assert [line for line in ps.splitlines() if str(STATE) in line] == []
    assert localcloud("status", check=False).returncode != 0
    result = localcloud("start", check=False)  # leave it as the fixture found it
    assert result.returncode == 0, result.stdout + result.stderr
