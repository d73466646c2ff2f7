"""Rights on other regions' resources, as AWS would evaluate them: names as narrow as the app's
naming allows, the deployment's account on every one, and what degraded reads need to tell a
missing block (404) from a refused one (403)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk.assertions import Template

from hycloud_infra.app_stacks import build_stacks

ROOT = Path(__file__).resolve().parents[2]
ACCOUNT = "000000000000"
HOME = "hycloud-instance"
S3 = "arn:aws:s3:::"
OWN_ACCOUNT = {"StringEquals": {"aws:ResourceAccount": ACCOUNT}}


def _stacks(layer: Path, **context: object) -> list[cdk.Stack]:
    (layer / "python").mkdir(exist_ok=True)
    (layer / "python" / "placeholder.py").write_text("")
    app = cdk.App(context={**json.loads((ROOT / "cdk.json").read_text())["context"], **context})
    build_stacks(app, root=ROOT, layer_dir=layer, account=ACCOUNT)
    return [s for s in app.node.children if isinstance(s, cdk.Stack)]


@pytest.fixture(scope="module")
def stacks(tmp_path_factory) -> dict[str, cdk.Stack]:
    """Three regions and a standby, with warm aliases (finding 5 is checked on the same synth)."""
    found = _stacks(
        tmp_path_factory.mktemp("layer"),
        **{"hycloud:standby": "ap-south-1", "hycloud:provisionedConcurrency": 1},
    )
    return {s.stack_name: s for s in found}


def render(value: Any) -> str:
    """A policy resource as text: pseudo parameters filled, this stack's own resources `<local:Id>`."""
    if isinstance(value, str):
        return value
    if "Fn::Join" in value:
        sep, parts = value["Fn::Join"]
        return sep.join(render(p) for p in parts)
    if "Ref" in value:
        return {"AWS::Partition": "aws", "AWS::AccountId": ACCOUNT}.get(
            value["Ref"], f"<local:{value['Ref']}>"
        )
    if "Fn::GetAtt" in value:
        return f"<local:{value['Fn::GetAtt'][0]}>"
    return f"<local:{json.dumps(value)}>"  # Fn::Select of a local resource's ARN


def statements(stack: cdk.Stack, role_prefix: str | None = None) -> list[dict]:
    """Every statement of the stack's inline policies (of the roles whose logical id starts with
    `role_prefix`, when given), its resources rendered."""
    found = []
    for policy in Template.from_stack(stack).find_resources("AWS::IAM::Policy").values():
        roles = [r["Ref"] for r in policy["Properties"]["Roles"]]
        if role_prefix and not any(r.startswith(role_prefix) for r in roles):
            continue
        for st in policy["Properties"]["PolicyDocument"]["Statement"]:
            resources = st["Resource"] if isinstance(st["Resource"], list) else [st["Resource"]]
            actions = st["Action"] if isinstance(st["Action"], list) else [st["Action"]]
            found.append({**st, "Resource": [render(r) for r in resources], "Action": actions})
    return found


def foreign(resource: str) -> bool:
    """A resource named by string, not this stack's own: another stack's, in this region or another
    (the CDK bootstrap's asset bucket, which the web app's publisher reads, is not the app's)."""
    return (
        "<local:" not in resource
        and not resource.startswith("arn:aws:s3:::cdk-")
        and resource.startswith(("arn:aws:s3:::", "arn:aws:dynamodb:", "arn:aws:states:", "arn:aws:lambda:"))
    )


BUCKET_PATTERNS = [
    re.compile(rf"{HOME}-\*-{ACCOUNT}"),  # any data instance's bucket (regions.any_data_bucket)
    re.compile(rf"{HOME}-[a-z]+-[a-z]+-\d-{ACCOUNT}"),  # one data instance's
    re.compile(rf"{HOME}-standby-{ACCOUNT}"),  # the standby's
    re.compile(rf"{HOME}-storescontent\*"),  # the home bucket, named by CloudFormation
]


def test_other_stacks_buckets_are_named_by_the_apps_pattern_and_the_account_holds_them(stacks):
    """S3 bucket ARNs carry no account: the name pattern is the app's own, and a condition
    `aws:ResourceAccount` keeps a same-named bucket of another account out."""
    seen = 0
    for name, stack in stacks.items():
        for st in statements(stack):
            for resource in (r for r in st["Resource"] if foreign(r) and r.startswith(S3)):
                seen += 1
                bucket = resource[len(S3) :].split("/")[0]
                assert any(p.fullmatch(bucket) for p in BUCKET_PATTERNS), (name, resource)
                assert st.get("Condition") == OWN_ACCOUNT, (name, st)
    assert seen >= 10


def test_other_stacks_tables_functions_and_state_machines_carry_the_account_and_an_exact_name(stacks):
    seen = 0
    for name, stack in stacks.items():
        for st in statements(stack):
            for resource in (r for r in st["Resource"] if foreign(r) and not r.startswith(S3)):
                seen += 1
                parts = resource.split(":")
                assert parts[4] == ACCOUNT, (name, resource)
                named = ":".join(parts[5:])
                # a wildcard only after a fixed name: executions of one machine, a table's CFN suffix
                assert "*" not in named or re.fullmatch(
                    r"(execution:[\w-]+:\*|table/HyCloud-Instance-StoresTable\*)", named
                ), (name, resource)
    assert seen >= 6


def test_the_standby_replicator_may_abort_the_multipart_copies_it_starts(stacks):
    home = stacks["HyCloud-Instance"]
    for role in ("StandbyReplicator", "StandbyStreamReplicator"):
        on_standby = [
            st
            for st in statements(home, role)
            if any(r == f"{S3}{HOME}-standby-{ACCOUNT}/*" for r in st["Resource"])
        ]
        actions = {a for st in on_standby for a in st["Action"]}
        assert {"s3:GetObject", "s3:PutObject", "s3:AbortMultipartUpload"} <= actions, (role, actions)


def _job_roles(stack: cdk.Stack) -> list[str]:
    roles = Template.from_stack(stack).find_resources("AWS::IAM::Role")
    return [r for r in roles if r.startswith(("RelayFetch", "Delta", "CodedRepairStep"))]


def test_functions_reading_other_buckets_blocks_may_list_those_buckets(stacks):
    """Without s3:ListBucket, S3 answers a missing key with 403, not 404 (fs/blocks.py: absent
    only on 404), so a degraded read would fail instead of rebuilding from the other blocks."""
    checked = 0
    for name, stack in stacks.items():
        for role in _job_roles(stack):
            sts = statements(stack, role)
            read = {
                r[len(S3) :].split("/")[0]
                for st in sts
                if {"s3:GetObject", "s3:GetObject*"} & set(st["Action"])
                for r in st["Resource"]
                if foreign(r) and r.startswith(S3)
            }
            listed = {
                r[len(S3) :]
                for st in sts
                if {"s3:ListBucket", "s3:ListBucket*"} & set(st["Action"])
                for r in st["Resource"]
                if foreign(r)
            }
            assert read <= listed, (name, role, read - listed)
            checked += bool(read)
    assert checked >= 5  # home relay, delta, repair; each data instance's relay and delta


def _invoked(stack: cdk.Stack) -> list[Any]:
    """The Lambda functions the stack's state machines invoke (their definitions' substitutions)."""
    machines = Template.from_stack(stack).find_resources("AWS::StepFunctions::StateMachine")
    return [
        value
        for m in machines.values()
        for key, value in m["Properties"].get("DefinitionSubstitutions", {}).items()
        if key.endswith("FunctionArn")
    ]


def test_with_warm_capacity_the_relay_and_delta_functions_are_only_invoked_through_the_alias(stacks):
    home = stacks["HyCloud-Instance"]
    template = Template.from_stack(home)
    aliases = set(template.find_resources("AWS::Lambda::Alias"))
    functions = template.find_resources("AWS::Lambda::Function")
    jobs = {n for n in functions if n.startswith(("RelayFetch", "Delta"))}
    assert len(aliases) == 2 and len(jobs) == 2
    refs = [json.dumps(v) for v in _invoked(home)]
    assert refs and not [r for r in refs if any(f'"{fn}"' in r for fn in jobs)], refs
    assert {r for r in refs if any(a in r for a in aliases)}, refs
    bare = {f"<local:{fn}>" for fn in jobs} | {f"<local:{fn}>:*" for fn in jobs}
    for st in statements(home):  # and the invoke rights name the alias too
        if "lambda:InvokeFunction" in st["Action"]:
            assert not bare & set(st["Resource"]), st
    controller = next(f for n, f in functions.items() if n.startswith("Controller"))
    target = json.dumps(controller["Properties"]["Environment"]["Variables"]["HYCLOUD_DELTA_FUNCTION"])
    assert any(a in target for a in aliases), target
