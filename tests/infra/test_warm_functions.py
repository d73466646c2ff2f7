"""Provisioned concurrency for the job functions: only when asked for, and the workflow uses it."""

from __future__ import annotations

from pathlib import Path

from aws_cdk.assertions import Template

from tests.infra.stack import instance_stack

ROOT = Path(__file__).resolve().parents[2]


def synth(tmp_path: Path, **context: object) -> Template:
    return Template.from_stack(instance_stack(tmp_path, **context)[1])


def test_off_by_default(tmp_path):
    assert synth(tmp_path).find_resources("AWS::Lambda::Alias") == {}


def test_provisioned_concurrency_for_the_delta_workflow(tmp_path):
    template = synth(tmp_path, **{"hycloud:provisionedConcurrency": 2})
    aliases = template.find_resources("AWS::Lambda::Alias")
    assert len(aliases) == 2
    for alias in aliases.values():
        assert alias["Properties"]["ProvisionedConcurrencyConfig"] == {"ProvisionedConcurrentExecutions": 2}
    alias_ids = set(aliases)
    machines = template.find_resources("AWS::StepFunctions::StateMachine")
    delta = next(m for name, m in machines.items() if name.startswith("DeltaJob"))
    subs = delta["Properties"]["DefinitionSubstitutions"]
    # the workflow invokes the warm aliases, not the bare functions
    assert {subs["RelayFetchFunctionArn"]["Ref"], subs["DeltaFunctionArn"]["Ref"]} == alias_ids, subs
