"""The app's stacks from `hycloud:regions`: a data instance per extra region, known to the home controller."""

from __future__ import annotations

import json
import re
from pathlib import Path

import aws_cdk as cdk
import pytest
from aws_cdk.assertions import Annotations, Match, Template
from cdk_nag import AwsSolutionsChecks

from hycloud_core import constants as c
from hycloud_infra.app_stacks import build_stacks
from hycloud_infra.regions import regions
from tests.infra.stack import instance_stack

ROOT = Path(__file__).resolve().parents[2]
ACCOUNT = "000000000000"


def _app(layer_dir: Path, **context: object) -> cdk.App:
    (layer_dir / "python").mkdir(exist_ok=True)
    (layer_dir / "python" / "placeholder.py").write_text("")
    return cdk.App(context={**json.loads((ROOT / "cdk.json").read_text())["context"], **context})


@pytest.fixture(scope="module")
def three(tmp_path_factory):
    layer = tmp_path_factory.mktemp("layer")
    return build_stacks(_app(layer), root=ROOT, layer_dir=layer, account=ACCOUNT)


def test_regions_from_context():
    assert regions(["us-east-1", "eu-west-1"]) == ["us-east-1", "eu-west-1"]
    assert regions("us-east-1, us-west-2") == ["us-east-1", "us-west-2"]
    assert regions(None) == ["us-east-1"]
    with pytest.raises(ValueError):
        regions("us-east-1,us-east-1")


def test_one_bucket_per_region(three):
    home, data = three
    assert [home.region, *(stack.region for stack in data)] == ["us-east-1", "us-west-2", "eu-west-1"]
    names = set()
    for stack in (home, *data):
        buckets = Template.from_stack(stack).find_resources("AWS::S3::Bucket")
        content = [b for b in buckets if b.startswith("StoresContent") or b.startswith("Content")]
        assert len(content) == 1, (stack.stack_name, list(buckets))
        names.add(json.dumps(buckets[content[0]]["Properties"].get("BucketName")))
    assert len(names) == 3


def test_data_instances_hold_no_controller_or_table(three):
    _, data = three
    for stack in data:
        template = Template.from_stack(stack)
        template.resource_count_is("AWS::DynamoDB::Table", 0)
        template.resource_count_is("AWS::ApiGateway::RestApi", 0)
        template.resource_count_is("AWS::StepFunctions::StateMachine", 2)
        template.resource_count_is("AWS::EFS::AccessPoint", 1)


def _controller_env(stack) -> dict:
    functions = Template.from_stack(stack).find_resources("AWS::Lambda::Function")
    (controller,) = [f for name, f in functions.items() if name.startswith("Controller")]
    return controller["Properties"]["Environment"]["Variables"]


def test_controller_knows_every_data_instance(three):
    home, data = three
    listed = json.loads(home.resolve(_controller_env(home)[c.ENV_INSTANCES]))
    assert [item["region"] for item in listed] == ["us-west-2", "eu-west-1"]
    for item, stack in zip(listed, data, strict=True):
        template = Template.from_stack(stack)
        (bucket,) = template.find_resources("AWS::S3::Bucket").values()
        assert item["bucket"] == bucket["Properties"]["BucketName"]
        machines = {
            m["Properties"]["StateMachineName"]
            for m in template.find_resources("AWS::StepFunctions::StateMachine").values()
        }
        arns = {item["relayStateMachineArn"], item["deltaStateMachineArn"]}
        assert {arn.rsplit(":", 1)[1] for arn in arns} == machines
        assert all(f":states:{stack.region}:{ACCOUNT}:stateMachine:" in arn for arn in arns)


def test_data_stacks_deploy_before_home(three):
    home, data = three
    assert set(home.dependencies) == set(data)


def test_one_region_gives_the_single_instance_template(tmp_path):
    layer = tmp_path / "a"
    layer.mkdir()
    home, data = build_stacks(
        _app(layer, **{"hycloud:regions": "us-east-1"}), root=ROOT, layer_dir=layer, account=ACCOUNT
    )
    other = tmp_path / "b"
    other.mkdir()
    _, alone = instance_stack(other, home.stack_name, account=ACCOUNT)
    assert data == []
    assert c.ENV_INSTANCES not in _controller_env(home)
    assert _strip_assets(Template.from_stack(home).to_json()) == _strip_assets(
        Template.from_stack(alone).to_json()
    )


def _strip_assets(template: dict) -> str:
    """Asset hashes differ with the layer folder's path; everything else must match."""
    return re.sub(r"[0-9a-f]{64}", "<hash>", json.dumps(template, sort_keys=True))


@pytest.mark.slow
def test_aws_solutions_checks_pass_on_every_stack_of_three_regions(tmp_path):
    """The data instance stacks and the home stack's rights on them meet the rules test_nag.py applies."""
    app = _app(tmp_path)
    home, data = build_stacks(app, root=ROOT, layer_dir=tmp_path, account=ACCOUNT)
    cdk.Aspects.of(app).add(AwsSolutionsChecks(verbose=True))
    app.synth()
    for stack in (home, *data):
        found = Annotations.from_stack(stack)
        rules = Match.string_like_regexp("AwsSolutions-.*")
        assert found.find_error("*", rules) == [] and found.find_warning("*", rules) == [], stack.stack_name


def test_data_instance_upkeep_only_evicts(three):
    _, data = three
    for stack in data:
        (rule,) = Template.from_stack(stack).find_resources("AWS::Events::Rule").values()
        assert rule["Properties"]["ScheduleExpression"] == "rate(5 minutes)"
        assert json.loads(rule["Properties"]["Targets"][0]["Input"]) == {"walk": False}


def test_home_stack_runs_repair_jobs_on_every_instance_bucket(three):
    home, data = three
    template = Template.from_stack(home)
    env = _controller_env(home)
    assert c.ENV_REPAIR_STATE_MACHINE in env
    functions = template.find_resources("AWS::Lambda::Function")
    (step,) = [f for name, f in functions.items() if name.startswith("CodedRepairStep")]
    assert step["Properties"]["FileSystemConfigs"]  # it reads link files on the home EFS
    policies = json.dumps(template.find_resources("AWS::IAM::Policy"))
    for stack in data:
        (bucket,) = Template.from_stack(stack).find_resources("AWS::S3::Bucket").values()
        assert bucket["Properties"]["BucketName"] in policies
    asl = json.loads((ROOT / "statemachines" / "coded_repair.asl.json").read_text())
    assert asl["States"]["Done?"]["Choices"][0]["Next"] == "Step"


def test_one_region_has_no_repair_jobs(tmp_path):
    home, data = build_stacks(
        _app(tmp_path, **{"hycloud:regions": "us-east-1"}), root=ROOT, layer_dir=tmp_path, account=ACCOUNT
    )
    assert data == []
    assert c.ENV_REPAIR_STATE_MACHINE not in _controller_env(home)
