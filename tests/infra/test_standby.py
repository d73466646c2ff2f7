"""The standby controller stack (`hycloud:standby`): its own API, controller, table, bucket and EFS
in another region, reached by the home stack's replication job through fixed names."""

from __future__ import annotations

import json
from pathlib import Path

import aws_cdk as cdk
import pytest
from aws_cdk.assertions import Annotations, Match, Template
from cdk_nag import AwsSolutionsChecks

from hycloud_infra.app_stacks import build_stacks
from hycloud_infra.standby import standby_region

ROOT = Path(__file__).resolve().parents[2]
ACCOUNT = "000000000000"


def _build(layer: Path, **context: object):
    (layer / "python").mkdir(exist_ok=True)
    (layer / "python" / "placeholder.py").write_text("")
    app = cdk.App(context={**json.loads((ROOT / "cdk.json").read_text())["context"], **context})
    home, data = build_stacks(app, root=ROOT, layer_dir=layer, account=ACCOUNT)
    return app, home, data


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    app, home, data = _build(tmp_path_factory.mktemp("layer"), **{"hycloud:standby": "us-west-2"})
    (standby,) = [
        s for s in app.node.children if isinstance(s, cdk.Stack) and s.stack_name.endswith("-Standby")
    ]
    return app, home, standby


def _functions(stack: cdk.Stack) -> dict[str, dict]:
    return Template.from_stack(stack).find_resources("AWS::Lambda::Function")


def test_the_standby_has_its_own_api_controller_table_bucket_and_efs(built):
    _, home, standby = built
    assert standby.region == "us-west-2" and standby in home.dependencies
    template = Template.from_stack(standby)
    for kind in (
        "AWS::ApiGateway::RestApi",
        "AWS::DynamoDB::Table",
        "AWS::S3::Bucket",
        "AWS::EFS::FileSystem",
    ):
        assert len(template.find_resources(kind)) == 1, kind
    (table,) = template.find_resources("AWS::DynamoDB::Table").values()
    assert table["Properties"]["TableName"] == "HyCloud-Instance-Standby-Table"
    controller = next(f for name, f in _functions(standby).items() if name.startswith("Controller"))
    env = controller["Properties"]["Environment"]["Variables"]
    assert env["HYCLOUD_ROLE"] == "standby" and controller["Properties"]["FileSystemConfigs"]
    assert set(template.find_outputs("*")) >= {"StandbyApiUrl", "StandbyApplyFunctionName"}


def test_the_home_replicator_reaches_the_standby_by_name_every_minute(built):
    _, home, _ = built
    template = Template.from_stack(home)
    replicator = next(f for name, f in _functions(home).items() if name.startswith("StandbyReplicator"))
    target = json.dumps(replicator["Properties"]["Environment"]["Variables"]["HYCLOUD_STANDBY"])
    for name in ("us-west-2", "HyCloud-Instance-Standby-Table", "HyCloud-Instance-Standby-Apply"):
        assert name in target
    assert replicator["Properties"]["FileSystemConfigs"]  # reads the primary's namespaces
    policies = json.dumps(template.find_resources("AWS::IAM::Policy"))
    assert (
        "table/HyCloud-Instance-Standby-Table" in policies
        and "function:HyCloud-Instance-Standby-Apply" in policies
    )
    rules = [
        r["Properties"].get("ScheduleExpression")
        for r in template.find_resources("AWS::Events::Rule").values()
    ]
    assert "rate(1 minute)" in rules


def test_the_home_tables_stream_feeds_the_stream_replicator_in_order_with_a_dead_letter_queue(built):
    _, home, _ = built
    template = Template.from_stack(home)
    (table,) = template.find_resources("AWS::DynamoDB::Table").values()
    assert table["Properties"]["StreamSpecification"] == {"StreamViewType": "NEW_AND_OLD_IMAGES"}
    (mapping,) = template.find_resources("AWS::Lambda::EventSourceMapping").values()
    props = mapping["Properties"]
    assert props["BisectBatchOnFunctionError"] and props["ParallelizationFactor"] == 1
    assert props["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    assert props["StartingPosition"] == "TRIM_HORIZON" and props["MaximumRetryAttempts"] == 10
    assert "StandbyStreamDeadLetters" in json.dumps(props["DestinationConfig"])
    pattern = json.loads(props["FilterCriteria"]["Filters"][0]["Pattern"])
    assert {p["prefix"] for p in pattern["dynamodb"]["Keys"]["pk"]["S"]} == {
        "USER#",
        "KEY#",
        "USERID#",
        "OBJ#",
        "USAGE#",
    }
    stream_fn = next(f for name, f in _functions(home).items() if name.startswith("StandbyStreamReplicator"))
    assert "HyCloud-Instance-Standby-Table" in json.dumps(stream_fn["Properties"]["Environment"])
    assert "FileSystemConfigs" not in stream_fn["Properties"]  # records only: no EFS


def test_the_standby_runs_relay_and_delta_jobs_of_its_own(built):
    _, _, standby = built
    template = Template.from_stack(standby)
    assert len(template.find_resources("AWS::StepFunctions::StateMachine")) == 2
    controller = next(f for name, f in _functions(standby).items() if name.startswith("Controller"))
    env = controller["Properties"]["Environment"]["Variables"]
    for name in (
        "HYCLOUD_RELAY_STATE_MACHINE_ARN",
        "HYCLOUD_DELTA_STATE_MACHINE_ARN",
        "HYCLOUD_DELTA_FUNCTION",
    ):
        assert name in env, name


def test_the_schedule_can_be_left_out(tmp_path):
    _, home, _ = _build(tmp_path, **{"hycloud:standby": "us-west-2", "hycloud:standbyEveryMinutes": 0})
    assert [n for n in _functions(home) if n.startswith("StandbyReplicator")]
    rules = Template.from_stack(home).find_resources("AWS::Events::Rule")
    assert not [name for name in rules if name.startswith("StandbySchedule")]


def test_no_standby_unless_asked(tmp_path):
    app, home, _ = _build(tmp_path)
    assert not [
        s for s in app.node.children if isinstance(s, cdk.Stack) and s.stack_name.endswith("-Standby")
    ]
    assert not [n for n in _functions(home) if n.startswith("StandbyReplicator")]
    assert standby_region("", "us-east-1") is None
    with pytest.raises(ValueError):
        standby_region("us-east-1", "us-east-1")


@pytest.mark.slow
def test_aws_solutions_checks_pass_on_the_standby(tmp_path):
    app, home, _ = _build(tmp_path, **{"hycloud:standby": "us-west-2"})
    cdk.Aspects.of(app).add(AwsSolutionsChecks(verbose=True))
    app.synth()
    for stack in [s for s in app.node.children if isinstance(s, cdk.Stack)]:
        found = Annotations.from_stack(stack)
        rules = Match.string_like_regexp("AwsSolutions-.*")
        assert found.find_error("*", rules) == [] and found.find_warning("*", rules) == [], stack.stack_name
