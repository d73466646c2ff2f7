"""Every function and workflow logs to a group with a retention (from context) and is traced."""

from __future__ import annotations

from pathlib import Path

import pytest
from aws_cdk.assertions import Template

from tests.infra.stack import instance_stack

ROOT = Path(__file__).resolve().parents[2]


def synth(tmp_path: Path, **context) -> Template:
    return Template.from_stack(instance_stack(tmp_path, "Logs", **context)[1])


@pytest.fixture(scope="module")
def template(tmp_path_factory) -> Template:
    return synth(tmp_path_factory.mktemp("layer"))


def _function_log_groups(template: Template) -> dict[str, int]:
    """Function logical id -> retention of the group its logging config names."""
    groups = template.find_resources("AWS::Logs::LogGroup")
    found = {}
    for fn_id, fn in template.find_resources("AWS::Lambda::Function").items():
        ref = fn["Properties"].get("LoggingConfig", {}).get("LogGroup", {}).get("Ref")
        if ref in groups:
            assert (
                "LogGroupName" not in groups[ref]["Properties"]
            )  # never /aws/lambda/<name>: see python_function
            found[fn_id] = groups[ref]["Properties"]["RetentionInDays"]
    return found


def test_every_function_has_a_log_group_kept_30_days_by_default(template):
    functions = template.find_resources("AWS::Lambda::Function", {"Properties": {"Runtime": "python3.12"}})
    assert (
        len(functions) == 9
    )  # relay, delta, tree step, bundle commit, upkeep, controller, dispatcher, web publisher, reach
    assert _function_log_groups(template) == {fn: 30 for fn in functions}


def test_every_function_is_traced_and_names_its_service(template):
    for fn in template.find_resources(
        "AWS::Lambda::Function", {"Properties": {"Runtime": "python3.12"}}
    ).values():
        assert fn["Properties"]["TracingConfig"] == {"Mode": "Active"}
        variables = fn["Properties"]["Environment"]["Variables"]
        assert variables["POWERTOOLS_SERVICE_NAME"].startswith("hycloud-")
        assert "POWERTOOLS_TRACE_DISABLED" not in variables


def test_workflows_log_to_a_group_with_a_retention(template):
    machines = template.find_resources("AWS::StepFunctions::StateMachine")
    assert len(machines) == 4  # relay, delta, tree, bundle commit
    for machine in machines.values():
        assert machine["Properties"]["LoggingConfiguration"]["Level"] == "ALL"
        assert machine["Properties"]["TracingConfiguration"] == {"Enabled": True}


def test_retention_and_tracing_come_from_context(tmp_path):
    template = synth(tmp_path, **{"hycloud:logRetentionDays": 7, "hycloud:tracing": "false"})
    assert set(_function_log_groups(template).values()) == {7}
    for fn in template.find_resources(
        "AWS::Lambda::Function", {"Properties": {"Runtime": "python3.12"}}
    ).values():
        assert fn["Properties"]["Environment"]["Variables"]["POWERTOOLS_TRACE_DISABLED"] == "true"


def test_an_unsupported_retention_is_refused(tmp_path):
    with pytest.raises(Exception, match="logRetentionDays"):
        synth(tmp_path, **{"hycloud:logRetentionDays": 8})
