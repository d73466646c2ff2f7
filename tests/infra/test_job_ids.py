"""The relay and delta jobs' resources keep the logical ids deployed stacks have: CloudFormation
replaces a resource whose id changes, which for these would mean new functions, security groups
and state machines (running executions stopped). The ids are those of the stacks as first
deployed, with provisioned concurrency on (the warm aliases) and a standby."""

from __future__ import annotations

import json
from pathlib import Path

import aws_cdk as cdk
import pytest
from aws_cdk.assertions import Template

from hycloud_infra.app_stacks import build_stacks

ROOT = Path(__file__).resolve().parents[2]
ACCOUNT = "000000000000"

RELAY = [
    "RelayFetchLogsFA24DE00",
    "RelayFetchServiceRole81DB1B20",
    "RelayFetchServiceRoleDefaultPolicy2DC09338",
    "RelayFetchSecurityGroup15502A39",
    "RelayFetch18FE3B67",
    "RelayLogs13CC6438",
    "RelayStateMachineRole552C22FE",
    "RelayStateMachineRoleDefaultPolicyA21E3088",
    "RelayStateMachine76577AA0",
]
DELTA = [
    "DeltaLogs0819BDEF",
    "DeltaServiceRoleCB59D08A",
    "DeltaServiceRoleDefaultPolicy4BDBAD17",
    "DeltaSecurityGroupE86B19A9",
    "Delta207CAD30",
    "DeltaJobLogs1DE42E1E",
    "DeltaJobStateMachineRoleDA796C28",
    "DeltaJobStateMachineRoleDefaultPolicy17DB7DF9",
    "DeltaJobStateMachine018FCDCD",
]
WARM = ["RelayFetchWarm414CC5D0", "DeltaWarmF098F000"]
STANDBY = [
    "JobsRelayFetchLogs4B6F64D1",
    "JobsRelayFetchServiceRole30CA176F",
    "JobsRelayFetchServiceRoleDefaultPolicy9F7C42AA",
    "JobsRelayFetchSecurityGroup188C57F5",
    "JobsRelayFetchD2529E79",
    "JobsRelayLogsB4B70855",
    "JobsRelayStateMachineRoleC5324E06",
    "JobsRelayStateMachineRoleDefaultPolicy15A171A8",
    "JobsRelayStateMachineC81540D7",
    "JobsDeltaLogs2DEF69E1",
    "JobsDeltaServiceRole3E996C99",
    "JobsDeltaServiceRoleDefaultPolicyC5FD397A",
    "JobsDeltaSecurityGroupE1088054",
    "JobsDelta0471DEC3",
    "JobsDeltaJobLogs41BDEF67",
    "JobsDeltaJobStateMachineRole96A34F4C",
    "JobsDeltaJobStateMachineRoleDefaultPolicyAB66C3EF",
    "JobsDeltaJobStateMachine9D622653",
]
JOB_PREFIXES = ("RelayFetch", "RelayLogs", "RelayStateMachine", "Delta", "JobsRelay", "JobsDelta")


@pytest.fixture(scope="module")
def templates(tmp_path_factory) -> dict[str, dict]:
    layer = tmp_path_factory.mktemp("layer")
    (layer / "python").mkdir()
    (layer / "python" / "placeholder.py").write_text("")
    context = {"hycloud:standby": "us-west-2", "hycloud:provisionedConcurrency": 2}
    app = cdk.App(context={**json.loads((ROOT / "cdk.json").read_text())["context"], **context})
    home, data = build_stacks(app, root=ROOT, layer_dir=layer, account=ACCOUNT)
    (standby,) = [
        s for s in app.node.children if isinstance(s, cdk.Stack) and s.stack_name.endswith("-Standby")
    ]
    stacks = {"home": home, "data": data[0], "standby": standby}
    return {kind: Template.from_stack(stack).to_json()["Resources"] for kind, stack in stacks.items()}


def _job_ids(resources: dict[str, dict]) -> set[str]:
    """The ids of the relay and delta resources, but for function versions (named by a code hash)."""
    return {
        name
        for name, resource in resources.items()
        if name.startswith(JOB_PREFIXES) and resource["Type"] != "AWS::Lambda::Version"
    }


def test_home_instance_relay_and_delta_keep_their_ids(templates):
    assert _job_ids(templates["home"]) == {*RELAY, *DELTA, *WARM}


def test_data_instance_relay_and_delta_keep_their_ids(templates):
    assert _job_ids(templates["data"]) == {*RELAY, *DELTA}


def test_standby_relay_and_delta_keep_their_ids(templates):
    assert _job_ids(templates["standby"]) == set(STANDBY)


def test_the_workflows_invoke_the_functions_of_their_own_stack(templates):
    """Each delta workflow relays with its own stack's relay function (the warm alias at home)."""
    expected = {
        "home": ("DeltaJobStateMachine018FCDCD", "RelayFetchWarm414CC5D0"),
        "data": ("DeltaJobStateMachine018FCDCD", "RelayFetch18FE3B67"),
        "standby": ("JobsDeltaJobStateMachine9D622653", "JobsRelayFetchD2529E79"),
    }
    for kind, (machine, relay) in expected.items():
        subs = templates[kind][machine]["Properties"]["DefinitionSubstitutions"]
        relay_ref = subs["RelayFetchFunctionArn"]
        assert relay_ref in ({"Ref": relay}, {"Fn::GetAtt": [relay, "Arn"]}), (kind, relay_ref)
