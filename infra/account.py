"""`make deploy` and `make destroy`: the app into an AWS account as a person would deploy it.

deploy: bootstraps every region the app uses (`hycloud:regions` and the standby's), deploys all
stacks, writes the outputs file, creates the first user and prints how to configure the client.
destroy: removes the stacks and lists what they retain on purpose (buckets, tables, file
systems: the users' data), each with the command that deletes it.

Credentials and the home region are the AWS CLI's (`AWS_PROFILE`, `AWS_REGION`...). With
`AWS_ENDPOINT_URL` set (`eval "$(.venv/bin/python infra/local/localcloud.py env)"`) the same
commands run against the local cloud, through cdklocal.

Context overrides for every cdk command (and for the regions bootstrapped) come from
`$CDK_CONTEXT`, as on the cdk command line: `make deploy CDK_CONTEXT="-c hycloud:regions=us-east-1"`
deploys the one-region profile; `make destroy` takes the same to remove it.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import boto3
from botocore.exceptions import ClientError

ROOT = Path(__file__).resolve().parents[1]
BIN = ROOT / ".localcloud" / "node" / "node_modules" / ".bin"  # the pinned CDK CLI (make setup)
RETAINED = {  # what a retained resource is, and how to delete it by hand
    "AWS::S3::Bucket": "aws s3 rb --force s3://{id} --region {region}",
    "AWS::DynamoDB::Table": "aws dynamodb delete-table --table-name {id} --region {region}",
    "AWS::DynamoDB::GlobalTable": "aws dynamodb delete-table --table-name {id} --region {region}",
    "AWS::EFS::FileSystem": "aws efs delete-file-system --file-system-id {id} --region {region}"
    "  (delete its mount targets first: aws efs describe-mount-targets --file-system-id {id})",
    "AWS::Logs::LogGroup": "aws logs delete-log-group --log-group-name {id} --region {region}",
    "AWS::IAM::Role": "aws iam delete-role --role-name {id}  (detach its policies first: aws iam "
    "list-attached-role-policies --role-name {id})",
}
# retained by CDK's defaults, but nothing to delete: the account's API Gateway logging setting, and
# deployments, which go with their API
NOT_LISTED = {"AWS::ApiGateway::Account", "AWS::ApiGateway::Deployment"}


def _local() -> bool:
    return bool(os.environ.get("AWS_ENDPOINT_URL"))


ENV_CONTEXT = "CDK_CONTEXT"


def context_args() -> list[str]:
    """`$CDK_CONTEXT` as cdk arguments: `-c key=value` (or `--context key=value`) pairs only."""
    args = shlex.split(os.environ.get(ENV_CONTEXT, ""))
    pairs = args[1::2]
    if (
        len(args) % 2
        or any(a not in ("-c", "--context") for a in args[::2])
        or any("=" not in p for p in pairs)
    ):
        sys.exit(f"{ENV_CONTEXT} takes -c key=value pairs, not {os.environ.get(ENV_CONTEXT)!r}")
    return args


def _context() -> dict:
    """cdk.json's context with `$CDK_CONTEXT`'s overrides, as the cdk commands will see it."""
    overrides = dict(pair.split("=", 1) for pair in context_args()[1::2])
    return {**json.loads((ROOT / "cdk.json").read_text())["context"], **overrides}


def regions(home: str) -> list[str]:
    """Every region a stack of the app goes to: the instances' and the standby's."""
    ctx = _context()
    configured = ctx.get("hycloud:regions") or [home]
    if isinstance(configured, str):  # a -c override: comma-separated, as the app reads it
        configured = [r.strip() for r in configured.split(",") if r.strip()]
    standby = os.environ.get("HYCLOUD_STANDBY_REGION", ctx.get("hycloud:standby") or "")
    standby = "" if standby.strip().lower() in ("none", "false", "off") else standby.strip()
    return list(dict.fromkeys([*configured, *([standby] if standby else [])]))


def _cdk(args: list[str]) -> None:
    tool = BIN / ("cdklocal" if _local() else "cdk")
    if not tool.exists():
        sys.exit(f"{tool} not found: run `make setup` (it installs the pinned CDK CLI)")
    extra = ["-c", "hycloud:tracing=false"] if _local() else []  # LocalStack's free edition has no X-Ray
    extra += context_args()
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}"}
    env.setdefault("CDK_DISABLE_VERSION_CHECK", "1")
    print("$", " ".join(["cdk", *args, *extra]), flush=True)
    subprocess.run([str(tool), *args, *extra], cwd=ROOT, env=env, check=True)


def fixed_names(account: str) -> list[tuple[str, str, str, str]]:
    """(region, type, name, stack) of the resources the app names itself: the data instances'
    buckets and the standby's bucket and table, which the home controller addresses by name."""
    sys.path.insert(0, str(ROOT / "infra"))
    from hycloud_infra.regions import DataInstanceNames, data_stack_name
    from hycloud_infra.regions import regions as configured
    from hycloud_infra.standby import StandbyNames, standby_region, standby_stack_name

    ctx = _context()
    name = ctx["hycloud:instanceName"]
    home, *others = configured(ctx.get("hycloud:regions"))
    found = []
    for region in others:
        stack = data_stack_name(name, region)
        found.append((region, "AWS::S3::Bucket", DataInstanceNames.of(stack, region, account).bucket, stack))
    standby = standby_region(os.environ.get("HYCLOUD_STANDBY_REGION", ctx.get("hycloud:standby")), home)
    if standby:
        stack = standby_stack_name(name)
        names = StandbyNames.of(stack, standby, account)
        found += [
            (standby, "AWS::S3::Bucket", names.bucket, stack),
            (standby, "AWS::DynamoDB::Table", names.table, stack),
        ]
    return found


def _exists(region: str, kind: str, name: str) -> bool:
    try:
        if kind == "AWS::S3::Bucket":
            boto3.client("s3", region_name=region).head_bucket(Bucket=name)
        else:
            boto3.client("dynamodb", region_name=region).describe_table(TableName=name)
    except ClientError as err:
        code = err.response.get("Error", {}).get("Code", "")
        if code in ("404", "NoSuchBucket", "NotFound", "ResourceNotFoundException"):
            return False
        raise  # 403: a bucket of that name in another account: the deploy would fail on it too
    return True


def collisions(account: str) -> list[tuple[str, str, str, str]]:
    """Named resources a destroyed deployment retained, which a new deploy would fail to create."""
    live = {
        s
        for r in {n[0] for n in fixed_names(account)}
        for s in _app_stacks(boto3.client("cloudformation", region_name=r))
    }
    return [n for n in fixed_names(account) if n[3] not in live and _exists(n[0], n[1], n[2])]


def deploy(outputs: Path, user: str) -> None:
    session = boto3.session.Session()
    home = session.region_name or "us-east-1"
    account = session.client("sts").get_caller_identity()["Account"]
    where = regions(home)
    taken = collisions(account)
    if taken:
        lines = [
            f"  {kind} {ident} ({region}), kept when {stack} was destroyed\n    "
            + RETAINED[kind].format(id=ident, region=region)
            for region, kind, ident, stack in taken
        ]
        sys.exit(
            "a destroyed deployment kept data under the names this one needs; the deploy would fail "
            "on them. Delete them (their data goes with them) or deploy under another name "
            '(CDK_CONTEXT="-c hycloud:instanceName=..."):\n' + "\n".join(lines)
        )
    _cdk(["bootstrap", *(f"aws://{account}/{r}" for r in where)])
    _cdk(
        [
            "deploy",
            "--all",
            "--require-approval",
            "never",
            "--concurrency",
            "4",
            "--outputs-file",
            str(outputs),
        ]
    )
    if _local():
        _add_local_api_url(outputs)
    stack = home_outputs(outputs)
    print(f"\ndeployed to {account} in {', '.join(where)}; outputs in {outputs}")
    _first_user(outputs, user, stack)


def _add_local_api_url(outputs: Path) -> None:
    """The local cloud's API URL names a host that does not resolve: add the one through its gateway."""
    sys.path.insert(0, str(ROOT))
    from infra.local.deploy import local_api_url

    data = json.loads(outputs.read_text())
    for stack in data.values():
        if "ApiUrl" in stack:
            stack["LocalApiUrl"] = local_api_url(stack["ApiUrl"], dict(os.environ))
    outputs.write_text(json.dumps(data, indent=2))


def home_outputs(outputs: Path) -> dict[str, str]:
    return next(o for o in json.loads(outputs.read_text()).values() if "ApiUrl" in o)


def _first_user(outputs: Path, user: str, stack: dict[str, str]) -> None:
    from hycloud import admin

    admin.use_outputs_region(outputs)
    try:
        created = admin.create_account(stack["TableName"], user)
    except Exception as err:  # noqa: BLE001 - an existing user is not a failed deploy
        print(f"first user {user!r} not created: {err}")
        return
    print(f"\nuser {created['user']} created; its API key (shown once): {created['api_key']}")
    print(f"configure the client:  hycloud configure --outputs {outputs}   (paste the key when asked)")
    print(f"web app: {stack.get('WebUrl', stack.get('LocalWebUrl', 'see the WebUrl output'))}")


def retained(home: str) -> list[tuple[str, str, str, str]]:
    """(region, type, physical id, stack) of every resource the deployed stacks keep on delete."""
    found = []
    for region in regions(home):
        cfn = boto3.client("cloudformation", region_name=region)
        for stack in _app_stacks(cfn):
            body = cfn.get_template(StackName=stack)["TemplateBody"]
            template = body if isinstance(body, dict) else json.loads(body)
            kept = {
                k
                for k, r in template.get("Resources", {}).items()
                if r.get("DeletionPolicy", "Delete").startswith("Retain")
            }
            for res in cfn.describe_stack_resources(StackName=stack)["StackResources"]:
                if res["LogicalResourceId"] in kept and res.get("PhysicalResourceId"):
                    found.append((region, res["ResourceType"], res["PhysicalResourceId"], stack))
    return found


def _app_stacks(cfn) -> list[str]:
    prefix = _context()["hycloud:instanceName"]
    pages = cfn.get_paginator("list_stacks").paginate(
        StackStatusFilter=[
            "CREATE_COMPLETE",
            "UPDATE_COMPLETE",
            "UPDATE_ROLLBACK_COMPLETE",
            "ROLLBACK_COMPLETE",
        ]
    )
    return [
        s["StackName"] for page in pages for s in page["StackSummaries"] if s["StackName"].startswith(prefix)
    ]


def destroy() -> None:
    home = boto3.session.Session().region_name or "us-east-1"
    before = retained(home)
    _cdk(["destroy", "--all", "--force"])
    left = {
        stack
        for region in regions(home)
        for stack in _app_stacks(boto3.client("cloudformation", region_name=region))
    }
    for stack in sorted(left):
        print(
            f"\nstack {stack} is still deployed: it is not in the app as configured now (its context differs)"
        )
    kept = [k for k in before if k[3] not in left and k[1] not in NOT_LISTED]
    if not kept:
        print("\nnothing retained")
        return
    print(f"\nretained on purpose ({len(kept)}: your data and logs); delete each when you no longer need it:")
    for region, kind, ident, stack in kept:
        how = RETAINED.get(kind, "delete it in the console ({kind})").format(
            id=ident, region=region, kind=kind
        )
        print(f"  {kind} {ident} ({stack}, {region})\n    {how}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("command", choices=["deploy", "destroy"])
    parser.add_argument("--outputs", type=Path, default=ROOT / "deploy-outputs.json", help="the outputs file")
    parser.add_argument("--user", default="admin", help="the first user's name (deploy)")
    args = parser.parse_args(argv)
    if args.command == "deploy":
        deploy(args.outputs, args.user)
    else:
        destroy()
    return 0


if __name__ == "__main__":
    sys.exit(main())
