"""The instance stack's template: real properties and placeholders filled (cfn-lint: test_aws_synth.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from aws_cdk.assertions import Match, Template

from hycloud_infra.constructs.sfn_from_asl import placeholders
from tests.infra.stack import instance_stack

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def template(tmp_path_factory) -> Template:
    return Template.from_stack(instance_stack(tmp_path_factory.mktemp("layer"))[1])


def test_functions_mount_efs_at_mnt_efs(template):
    fns = template.find_resources("AWS::Lambda::Function", {"Properties": {"Runtime": "python3.12"}})
    # All but the function that copies the web app to S3, the job dispatcher and the reach function (no files).
    fns = {name: fn for name, fn in fns.items() if not name.startswith(("WebPublish", "Dispatcher", "Reach"))}
    assert len(fns) == 6  # relay, delta, tree step, bundle commit, upkeep, controller
    for fn in fns.values():
        props = fn["Properties"]
        assert props["FileSystemConfigs"][0]["LocalMountPath"] == "/mnt/efs"
        assert props["Environment"]["Variables"]["HYCLOUD_EFS_ROOT"] == "/mnt/efs"
        assert "VpcConfig" in props and len(props["Layers"]) == 1


def test_functions_in_the_vpc_leave_it_only_through_its_endpoints_and_the_reach_function(template):
    """No NAT: S3 and DynamoDB gateway endpoints, one Lambda interface endpoint, and the reach
    function, outside the VPC, which every function in the VPC may invoke (hycloud_core/reach.py)."""
    assert template.find_resources("AWS::EC2::NatGateway") == {}
    endpoints = template.find_resources("AWS::EC2::VPCEndpoint")
    kinds = sorted(
        (e["Properties"].get("VpcEndpointType", "Gateway"), json.dumps(e["Properties"]["ServiceName"]))
        for e in endpoints.values()
    )
    assert [k for k, _ in kinds] == ["Gateway", "Gateway", "Interface"]
    assert "lambda" in [n for k, n in kinds if k == "Interface"][0]
    fns = template.find_resources("AWS::Lambda::Function", {"Properties": {"Runtime": "python3.12"}})
    reach = [name for name in fns if name.startswith("Reach")]
    assert len(reach) == 1 and "VpcConfig" not in fns[reach[0]]["Properties"]
    in_vpc = {name: fn for name, fn in fns.items() if "VpcConfig" in fn["Properties"]}
    assert len(in_vpc) == 6
    policies = json.dumps(template.find_resources("AWS::IAM::Policy"))
    for fn in in_vpc.values():
        assert fn["Properties"]["Environment"]["Variables"]["HYCLOUD_REACH_FUNCTION"] == {"Ref": reach[0]}
    assert policies.count('"lambda:InvokeFunction"') >= len(in_vpc)


def test_access_point_and_storage(template):
    template.has_resource_properties(
        "AWS::EFS::AccessPoint", {"RootDirectory": Match.object_like({"Path": "/hycloud"})}
    )
    template.has_resource_properties("AWS::EFS::FileSystem", {"Encrypted": True})
    template.has_resource_properties(
        "AWS::S3::Bucket",
        {
            "PublicAccessBlockConfiguration": {
                "BlockPublicAcls": True,
                "BlockPublicPolicy": True,
                "IgnorePublicAcls": True,
                "RestrictPublicBuckets": True,
            },
            "BucketEncryption": Match.any_value(),
        },
    )
    template.has_resource_properties(
        "AWS::DynamoDB::Table",
        {
            "KeySchema": [
                {"AttributeName": "pk", "KeyType": "HASH"},
                {"AttributeName": "sk", "KeyType": "RANGE"},
            ],
            "BillingMode": "PAY_PER_REQUEST",
        },
    )


def test_rest_api_takes_binary_bodies(template):
    template.has_resource_properties(
        "AWS::ApiGateway::RestApi", {"BinaryMediaTypes": ["application/octet-stream"]}
    )


def test_every_asl_placeholder_is_substituted(template):
    machines = template.find_resources("AWS::StepFunctions::StateMachine")
    several_regions_only = {"coded_repair.asl.json"}  # tests/infra/test_regions.py
    own = [asl for asl in (ROOT / "statemachines").glob("*.asl.json") if asl.name not in several_regions_only]
    assert len(machines) == len(own)
    for asl in (ROOT / "statemachines").glob("*.asl.json"):
        assert placeholders(asl), f"{asl.name} has no function placeholder"
    for machine in machines.values():
        subs = machine["Properties"].get("DefinitionSubstitutions", {})
        assert subs and all(v for v in subs.values())


def test_controller_may_start_tree_jobs_which_loop_one_step(template):
    controllers = template.find_resources(
        "AWS::Lambda::Function",
        {"Properties": {"Environment": {"Variables": {"HYCLOUD_TREE_STATE_MACHINE_ARN": Match.any_value()}}}},
    )
    assert len(controllers) == 1
    asl = json.loads((ROOT / "statemachines" / "tree_job.asl.json").read_text())
    assert asl["States"]["Done?"]["Choices"][0] == {
        "Variable": "$.state",
        "StringEquals": "running",
        "Next": "Step",
    }
    assert asl["States"]["Step"]["Catch"][0]["Next"] == "RecordFailure"
    starts = [
        json.dumps(st["Resource"])
        for policy in template.find_resources("AWS::IAM::Policy").values()
        for st in policy["Properties"]["PolicyDocument"]["Statement"]
        if "states:StartExecution" in json.dumps(st["Action"])
    ]
    assert any("TreeJobWorkflow" in resource for resource in starts)


def test_upkeep_walks_namespaces_hourly_and_evicts_every_five_minutes(template):
    rules = template.find_resources("AWS::Events::Rule")
    scheduled = [r["Properties"] for r in rules.values() if "ScheduleExpression" in r["Properties"]]
    by_rate = {r["ScheduleExpression"]: r["Targets"][0] for r in scheduled}
    assert json.loads(by_rate["rate(5 minutes)"]["Input"]) == {"walk": False}
    assert "Input" not in by_rate["rate(1 hour)"]


def test_dispatcher_runs_when_a_job_execution_ends(template):
    template.has_resource_properties(
        "AWS::Events::Rule",
        {
            "EventPattern": Match.object_like(
                {
                    "source": ["aws.states"],
                    "detail-type": ["Step Functions Execution Status Change"],
                    "detail": Match.object_like({"status": ["SUCCEEDED", "FAILED", "TIMED_OUT", "ABORTED"]}),
                }
            )
        },
    )
