"""The cost model's deployment shape (hycloud_core/cost/idle.py) is what the CDK app synthesizes:
per stack, the interface endpoints, NAT gateways, subnets' zones, alarms, KMS keys, provisioned
concurrency and scheduled functions. A change to either side that the other misses fails here, so
the idle cost `hycloud usage` and bench/cost_bench.py print stays the deployment's."""

from __future__ import annotations

import json
import re
from pathlib import Path

import aws_cdk as cdk
import pytest
from aws_cdk.assertions import Template

from hycloud_core.cost.idle import StackShape, shape_from_context
from hycloud_infra.app_stacks import build_stacks

ROOT = Path(__file__).resolve().parents[2]
ACCOUNT = "000000000000"
PROFILES = {
    "default with standby and warm functions": {
        "hycloud:standby": "us-west-2",
        "hycloud:provisionedConcurrency": 2,
    },
    "one region": {"hycloud:regions": "us-east-1"},
}


def _synth(layer: Path, overrides: dict) -> tuple[dict, dict[str, cdk.Stack]]:
    (layer / "python").mkdir(exist_ok=True)
    (layer / "python" / "placeholder.py").write_text("")
    context = {**json.loads((ROOT / "cdk.json").read_text())["context"], **overrides}
    app = cdk.App(context=context)
    build_stacks(app, root=ROOT, layer_dir=layer, account=ACCOUNT)
    stacks = {s.stack_name: s for s in app.node.children if isinstance(s, cdk.Stack)}
    return context, stacks


@pytest.fixture(scope="module", params=list(PROFILES))
def synthesized(request, tmp_path_factory):
    return _synth(tmp_path_factory.mktemp("layer"), PROFILES[request.param])


def _minutes(expression: str) -> float:
    count, unit = re.fullmatch(r"rate\((\d+) (\w+?)s?\)", expression).groups()
    return int(count) * {"minute": 1, "hour": 60, "day": 1440}[unit]


def _seen(template: dict) -> dict:
    """The shape's figures as the template has them."""
    res = template["Resources"]

    def of(kind: str) -> list[dict]:
        return [r.get("Properties", {}) for r in res.values() if r["Type"] == kind]

    memory = {
        k: r["Properties"].get("MemorySize", 128)
        for k, r in res.items()
        if r["Type"] == "AWS::Lambda::Function"
    }
    endpoints = [p for p in of("AWS::EC2::VPCEndpoint") if p.get("VpcEndpointType") == "Interface"]
    warm = sorted(
        (
            p["ProvisionedConcurrencyConfig"]["ProvisionedConcurrentExecutions"],
            memory[p["FunctionName"]["Ref"]],
        )
        for p in of("AWS::Lambda::Alias")
        if "ProvisionedConcurrencyConfig" in p
    )
    schedules = sorted(
        (_minutes(p["ScheduleExpression"]), memory[t["Arn"]["Fn::GetAtt"][0]])
        for p in of("AWS::Events::Rule")
        if "ScheduleExpression" in p
        for t in p["Targets"]
    )
    return {
        "interface_endpoints": sorted(
            json.dumps(p["ServiceName"]).rsplit(".", 1)[-1].strip('"]}') for p in endpoints
        ),
        "nat_gateways": len(of("AWS::EC2::NatGateway")),
        "azs": len({json.dumps(p["AvailabilityZone"]) for p in of("AWS::EC2::Subnet")}),
        "alarms": len(of("AWS::CloudWatch::Alarm")),
        "kms_keys": len(of("AWS::KMS::Key")),
        "warm": warm,
        "schedules": schedules,
    }


def _expected(stack: StackShape) -> dict:
    return {
        "interface_endpoints": sorted(stack.interface_endpoints),
        "nat_gateways": stack.nat_gateways,
        "azs": stack.azs,
        "alarms": stack.alarms,
        "kms_keys": stack.kms_keys,
        "warm": sorted((w.instances, w.memory_mb) for w in stack.warm),
        "schedules": sorted((s.every_minutes, s.memory_mb) for s in stack.schedules),
    }


def test_the_cost_models_shape_is_the_synthesized_one(synthesized):
    context, stacks = synthesized
    shape = shape_from_context(context)
    assert {s.name for s in shape.stacks} == set(stacks)
    for modelled in shape.stacks:
        stack = stacks[modelled.name]
        assert stack.region == modelled.region
        assert _seen(Template.from_stack(stack).to_json()) == _expected(modelled), modelled.name
