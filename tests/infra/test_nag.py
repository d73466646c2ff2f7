"""cdk-nag's AwsSolutions rules over the synthesized instance stack: no error and no warning left.

What the rules flag and the design keeps is suppressed in `hycloud_infra/nag_suppressions.py`,
each with its reason; a new finding fails this test until it is fixed or justified there.
"""

from __future__ import annotations

from pathlib import Path

import aws_cdk as cdk
import pytest
from aws_cdk.assertions import Annotations, Match
from cdk_nag import AwsSolutionsChecks

from tests.infra.stack import instance_stack

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def annotations(tmp_path_factory) -> Annotations:
    app, stack = instance_stack(tmp_path_factory.mktemp("layer"), "Nag")
    cdk.Aspects.of(app).add(AwsSolutionsChecks(verbose=True))
    app.synth()
    return Annotations.from_stack(stack)


def _findings(found: list) -> list[str]:
    return sorted(f"{f.id}: {str(f.entry.data).split(':')[0]}" for f in found)


def test_no_aws_solutions_errors(annotations):
    assert _findings(annotations.find_error("*", Match.string_like_regexp("AwsSolutions-.*"))) == []


def test_no_aws_solutions_warnings(annotations):
    assert _findings(annotations.find_warning("*", Match.string_like_regexp("AwsSolutions-.*"))) == []
