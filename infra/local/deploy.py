"""Deploy the CDK app into the local cloud and write its outputs to .localcloud/outputs.json.

Uses the same app and templates as a real `cdk deploy`; only the endpoint differs. The REST
API's public URL names a DNS host that does not resolve offline, so a `LocalApiUrl` output is
added that reaches the same API through the gateway on 127.0.0.1; the web app is published by
invoking its function (no custom resources here), which gives `LocalWebUrl`.

Every region of `hycloud:regions` (cdk.json, or `--regions a,b`) is bootstrapped and deployed
into the one local cloud. outputs.json keeps the home instance stack's outputs only (what the
client's `configure --outputs` reads); .localcloud/instances.json lists every instance's outputs
by region, home first (design: docs/GEO.md).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
STATE = ROOT / ".localcloud"
OUTPUTS = STATE / "outputs.json"
# Set by `make test` (run_tests.py) once it has deployed: the tests use that deployment (OUTPUTS).
DEPLOYED_ENV = "HYCLOUD_CLOUD_DEPLOYED"
INSTANCES = STATE / "instances.json"
CDKLOCAL = STATE / "node" / "node_modules" / ".bin" / "cdklocal"
LOCALCLOUD = ROOT / "infra" / "local" / "localcloud.py"
SPARE_REGION = "ap-south-1"  # bootstrapped with the others: where a test adds an instance (add_instance)
STANDBY_REGION = "us-west-2"  # the local cloud deploys a standby controller here (docs/FAILOVER.md)


def cloud_env() -> dict[str, str]:
    """Environment for AWS clients aimed at the local cloud."""
    out = subprocess.run(
        [sys.executable, str(LOCALCLOUD), "env", "--json"], check=True, capture_output=True, text=True
    ).stdout
    return {k: str(v) for k, v in json.loads(out).items()}


def start() -> bool:
    """Start the local cloud; True when this call started it (so the caller should stop it)."""
    status = subprocess.run([sys.executable, str(LOCALCLOUD), "status"], capture_output=True, text=True)
    if status.returncode == 0:
        return False
    subprocess.run([sys.executable, str(LOCALCLOUD), "start"], check=True)
    return True


def stop() -> None:
    subprocess.run([sys.executable, str(LOCALCLOUD), "stop"], check=True)


def _run_cdk(args: list[str], env: dict[str, str]) -> None:
    cmd = [str(CDKLOCAL), *args]
    result = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    if result.returncode != 0:
        tail = "\n".join((result.stdout + result.stderr).splitlines()[-40:])
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{tail}")


def configured_regions() -> list[str]:
    """The regions cdk.json deploys by default."""
    return json.loads((ROOT / "cdk.json").read_text())["context"]["hycloud:regions"]


def _cdk_env() -> dict[str, str]:
    return {
        **os.environ,
        **cloud_env(),
        "CDK_DISABLE_VERSION_CHECK": "1",
        "CDK_DISABLE_CLI_TELEMETRY": "1",
        "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}",
        "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION": "1",
    }


def add_instance(region: str, log=print) -> dict[str, str]:
    """Deploy one more data instance (not on the ring, unknown to the home stack) unless this local
    cloud has it; answer its description in the shape of HYCLOUD_INSTANCES (docs/GEO.md)."""
    env = _cdk_env()
    stack = f"{_home_stack_name()}-{region}"
    outputs = _stack_outputs(stack, region, env)
    if outputs is None:
        started = time.monotonic()
        if _stack_outputs("CDKToolkit", region, env) is None:
            _run_cdk(["bootstrap", f"aws://000000000000/{region}"], env)
        context = [
            "-c",
            "hycloud:tracing=false",
            "-c",
            f"hycloud:regions={','.join([*configured_regions(), region])}",
        ]
        _run_cdk(["deploy", stack, "--exclusively", "--require-approval", "never", *context], env)
        log(f"instance {region}: {time.monotonic() - started:.1f}s")
        outputs = _stack_outputs(stack, region, env) or {}
    return {
        "region": region,
        "bucket": outputs["BucketName"],
        "relayStateMachineArn": outputs["RelayStateMachineArn"],
        "deltaStateMachineArn": outputs["DeltaStateMachineArn"],
    }


def _stack_outputs(stack: str, region: str, env: dict[str, str]) -> dict[str, str] | None:
    """A deployed stack's outputs, None when it is not deployed."""
    import boto3
    from botocore.exceptions import ClientError

    keys = {
        "aws_access_key_id": env["AWS_ACCESS_KEY_ID"],
        "aws_secret_access_key": env["AWS_SECRET_ACCESS_KEY"],
    }
    cfn = boto3.client("cloudformation", endpoint_url=env["AWS_ENDPOINT_URL"], region_name=region, **keys)
    try:
        (found,) = cfn.describe_stacks(StackName=stack)["Stacks"]
    except ClientError:
        return None
    if not found["StackStatus"].endswith("_COMPLETE") or "ROLLBACK" in found["StackStatus"]:
        return None
    return {o["OutputKey"]: o["OutputValue"] for o in found.get("Outputs", [])}


def _home_stack_name() -> str:
    return json.loads((ROOT / "cdk.json").read_text())["context"]["hycloud:instanceName"]


def deploy(
    log=print, regions: list[str] | None = None, standby: str | None = STANDBY_REGION
) -> dict[str, str]:
    """Bootstrap (first time per local cloud) and deploy; return the home instance stack's outputs.
    `standby`: the standby controller's region (docs/FAILOVER.md), None for none."""
    regions = regions or configured_regions()
    env = _cdk_env()
    started = time.monotonic()
    extra = [r for r in (SPARE_REGION, standby) if r and r not in regions]  # same command: about free
    _run_cdk(
        ["bootstrap", *(f"aws://000000000000/{region}" for region in dict.fromkeys([*regions, *extra]))], env
    )
    log(f"bootstrap: {time.monotonic() - started:.1f}s")
    started = time.monotonic()
    deploy_args = [
        "deploy",
        "--all",
        "--concurrency",
        "4",
        "--require-approval",
        "never",
        "--outputs-file",
        str(OUTPUTS),
    ]
    context = ["-c", "hycloud:tracing=false", "-c", f"hycloud:regions={','.join(regions)}"]
    # the local controller decodes on two cores shared with every other function and the tests:
    # a share link or a delta base made whole in one request stays well inside 29 s at 128 MiB
    context += ["-c", f"hycloud:codedInlineBytes={128 * 2**20}"]
    # the standby's replication runs when invoked: every minute it would copy each test user's files
    context += ["-c", f"hycloud:standby={standby or ''}", "-c", "hycloud:standbyEveryMinutes=0"]
    _run_cdk([*deploy_args, *context], env)  # LocalStack's free edition has no X-Ray
    log(f"deploy: {time.monotonic() - started:.1f}s")
    data = _every_stacks_outputs(json.loads(OUTPUTS.read_text()), regions, env, log)
    name, outputs = next((stack, out) for stack, out in data.items() if "ApiUrl" in out)
    outputs["LocalApiUrl"] = local_api_url(outputs["ApiUrl"], env)
    for standby in (out for out in data.values() if "StandbyApiUrl" in out):  # docs/FAILOVER.md
        outputs.update(standby, StandbyLocalApiUrl=local_api_url(standby["StandbyApiUrl"], env))
    if "WebPublishFunctionName" in outputs:  # custom resources are LocalStack Pro only: publish here
        outputs["LocalWebUrl"] = _invoke(outputs["WebPublishFunctionName"], env)["SiteUrl"]
    OUTPUTS.write_text(json.dumps({name: outputs}, indent=2))
    _write_instances(name, data, regions)
    return outputs


def running_deployment(log=lambda msg: None) -> tuple[dict[str, str], dict[str, str]]:
    """The deployed app's outputs and the cloud's environment (also set in os.environ), starting
    the local cloud and deploying when needed: what a benchmark runs against."""
    fresh = start()  # a cloud started now holds nothing: outputs of an earlier one are stale
    outputs = (
        deploy(log=log) if fresh or not OUTPUTS.exists() else json.loads(OUTPUTS.read_text()).popitem()[1]
    )
    env = cloud_env()
    os.environ.update(env)
    return outputs, env


def local_api_url(api_url: str, env: dict[str, str]) -> str:
    """The same API through the local gateway on 127.0.0.1 (the public host does not resolve offline)."""
    api_id = re.match(r"https?://([^.]+)\.execute-api", api_url).group(1)
    return f"{env['AWS_ENDPOINT_URL']}/restapis/{api_id}/v1/_user_request_"


def _instance_stacks(home: str, regions: list[str]) -> dict[str, str]:
    """region -> the name of its instance stack (the home's under the first region)."""
    return {regions[0]: home, **{region: f"{home}-{region}" for region in regions[1:]}}


def _every_stacks_outputs(
    data: dict[str, dict[str, str]], regions: list[str], env: dict[str, str], log
) -> dict[str, dict[str, str]]:
    """The outputs file's stacks, and each instance stack it left out read from CloudFormation: in
    one fresh-clone run the file the CDK CLI wrote lacked a data instance it had just deployed."""
    for region, stack in _instance_stacks(_home_stack_name(), regions).items():
        if stack not in data:
            found = _stack_outputs(stack, region, env)
            if found is None:
                raise RuntimeError(f"{stack} in {region} is not deployed (not in {OUTPUTS})")
            log(f"{stack}: outputs read from CloudFormation (not in {OUTPUTS})")
            data[stack] = found
    return data


def _write_instances(home: str, data: dict[str, dict[str, str]], regions: list[str]) -> None:
    """region -> that instance's outputs (the home's under the first region)."""
    stacks = _instance_stacks(home, regions)
    instances = {region: {"Region": region, **data[stack]} for region, stack in stacks.items()}
    INSTANCES.write_text(json.dumps(instances, indent=2))


def instances() -> dict[str, dict[str, str]]:
    """The deployed instances' outputs by region, home first."""
    return json.loads(INSTANCES.read_text())


def _invoke(function_name: str, env: dict[str, str]) -> dict:
    import boto3

    settings = {
        k: env[v] for k, v in (("endpoint_url", "AWS_ENDPOINT_URL"), ("region_name", "AWS_DEFAULT_REGION"))
    }
    keys = {
        "aws_access_key_id": env["AWS_ACCESS_KEY_ID"],
        "aws_secret_access_key": env["AWS_SECRET_ACCESS_KEY"],
    }
    answer = boto3.client("lambda", **settings, **keys).invoke(FunctionName=function_name, Payload=b"{}")
    result = json.loads(answer["Payload"].read())
    if "FunctionError" in answer:
        raise RuntimeError(f"{function_name} failed: {result}")
    return result


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description="Start the local cloud and deploy the app into it.")
    parser.add_argument("--regions", help="comma-separated regions, home first (default: cdk.json)")
    parser.add_argument("--no-standby", action="store_true", help="deploy no standby controller")
    args = parser.parse_args()
    start()
    regions = args.regions.split(",") if args.regions else None
    print(json.dumps(deploy(regions=regions, standby=None if args.no_standby else STANDBY_REGION), indent=2))
