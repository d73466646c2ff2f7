"""infra/local/deploy.py: every instance's outputs, from the CDK CLI's outputs file or, for a stack
the file left out, from CloudFormation; a stack in neither is a clear error."""

from __future__ import annotations

import pytest

from infra.local import deploy

REGIONS = ["us-east-1", "us-west-2", "eu-west-1"]


def test_a_stack_the_file_left_out_is_read_from_cloudformation(monkeypatch):
    asked = []

    def stack_outputs(stack, region, env):
        asked.append((stack, region))
        return {"BucketName": "b-eu"}

    monkeypatch.setattr(deploy, "_stack_outputs", stack_outputs)
    written = {"HyCloud-Instance": {"ApiUrl": "u"}, "HyCloud-Instance-us-west-2": {"BucketName": "b-us"}}
    data = deploy._every_stacks_outputs(dict(written), REGIONS, {}, log=lambda msg: None)
    assert asked == [("HyCloud-Instance-eu-west-1", "eu-west-1")]
    assert data == {**written, "HyCloud-Instance-eu-west-1": {"BucketName": "b-eu"}}


def test_a_stack_in_neither_is_named(monkeypatch):
    monkeypatch.setattr(deploy, "_stack_outputs", lambda stack, region, env: None)
    with pytest.raises(RuntimeError, match="HyCloud-Instance-eu-west-1 in eu-west-1 is not deployed"):
        deploy._every_stacks_outputs(
            {"HyCloud-Instance": {}, "HyCloud-Instance-us-west-2": {}}, REGIONS, {}, log=lambda msg: None
        )
