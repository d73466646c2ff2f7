"""Segments (docs/SEGMENTS.md): the upkeep is told the context's settings and may write and delete
`segments/*`; the tree and bundle jobs may read them; a bad setting fails at synth."""

from __future__ import annotations

import json

import aws_cdk as cdk
import pytest
from aws_cdk.assertions import Template

from hycloud_infra.constructs.segments import segment_env
from tests.infra.stack import instance_stack


def _statements_of(template: Template, function_id: str) -> list[dict]:
    """The IAM statements of the role of the function whose logical id starts with `function_id`."""
    functions = template.find_resources("AWS::Lambda::Function")
    [role] = [
        f["Properties"]["Role"]["Fn::GetAtt"][0] for k, f in functions.items() if k.startswith(function_id)
    ]
    policies = template.find_resources("AWS::IAM::Policy").values()
    return [
        s
        for p in policies
        if {"Ref": role} in p["Properties"]["Roles"]
        for s in p["Properties"]["PolicyDocument"]["Statement"]
    ]


def _on_segments(statements: list[dict]) -> set[str]:
    actions: set[str] = set()
    for s in statements:
        if "/segments/*" in json.dumps(s["Resource"]):
            actions |= set([s["Action"]] if isinstance(s["Action"], str) else s["Action"])
    return actions


def test_upkeep_packs_with_the_context_settings_and_jobs_read_segments(tmp_path):
    _app, stack = instance_stack(
        tmp_path, **{"hycloud:segmentAfterDays": 2, "hycloud:segmentMinLiveShare": 0.25}
    )
    template = Template.from_stack(stack)
    upkeep = template.find_resources("AWS::Lambda::Function")
    [env] = [
        f["Properties"]["Environment"]["Variables"] for k, f in upkeep.items() if k.startswith("CacheUpkeep")
    ]
    assert env["HYCLOUD_SEGMENT_AFTER_S"] == str(2 * 86400) and env["HYCLOUD_SEGMENT_MIN_LIVE"] == "0.25"
    assert {"s3:PutObject", "s3:DeleteObject*", "s3:GetObject*"} <= _on_segments(
        _statements_of(template, "CacheUpkeep")
    )
    for job in ("TreeJob", "BundleJob"):
        granted = _on_segments(_statements_of(template, job))
        assert "s3:GetObject*" in granted and "s3:PutObject" not in granted


def _env(**context: object) -> dict[str, str]:
    return segment_env(cdk.Stack(cdk.App(context=context), "S"))


def test_segment_settings_from_context():
    assert _env() == {"HYCLOUD_SEGMENT_AFTER_S": str(7 * 86400)}  # 7 days by default
    assert _env(**{"hycloud:segmentAfterDays": "none"}) == {}
    assert _env(**{"hycloud:segmentBytes": 8388608})["HYCLOUD_SEGMENT_BYTES"] == "8388608"
    with pytest.raises(ValueError, match="segmentMinLiveShare"):
        _env(**{"hycloud:segmentMinLiveShare": 2})
    with pytest.raises(ValueError, match="segmentAfterDays"):
        _env(**{"hycloud:segmentAfterDays": -1})
