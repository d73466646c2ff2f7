"""The AWS flavour as someone with a fresh machine synthesizes it: the CDK CLI, a real-looking
account, tracing on, the default regions of cdk.json, and no AWS credentials anywhere (a first
synth must not need them: availability zones come from `hycloud:availabilityZones`).

Then cfn-lint with no error or warning on every template (the one lint of the app's templates:
cfn-lint takes seconds per template), and every state machine's definition, its placeholders
filled, valid Amazon States Language (cfn-lint's E3601 on the definition inlined: CDK ships it as
an S3 asset, which cfn-lint does not read, or inlined with its placeholders).
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
CDK = ROOT / ".localcloud" / "node" / "node_modules" / ".bin" / "cdk"
ACCOUNT = "123456789012"
CANARY = "BrokenCanary"  # a definition made invalid on purpose: the check must refuse it

pytestmark = pytest.mark.slow


def _no_credentials_env(home: Path) -> dict[str, str]:
    """The environment without AWS_* and CDK_* variables, a HOME with no ~/.aws, the venv first."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "CDK_"))}
    env.update(
        HOME=str(home),
        PATH=f"{Path(sys.executable).parent}:{env.get('PATH', '/usr/bin:/bin')}",
        CDK_DEFAULT_ACCOUNT=ACCOUNT,  # what a real account's synth gives the app, without asking AWS
        CDK_DISABLE_VERSION_CHECK="1",
        CDK_DISABLE_CLI_TELEMETRY="true",
    )
    return env


@pytest.fixture(scope="module")
def assembly(tmp_path_factory) -> Path:
    """One synth of the whole app, shared by the checks below."""
    if not CDK.exists():
        pytest.fail(f"{CDK} is missing: run `make setup`")
    out = tmp_path_factory.mktemp("cdk.out")
    home = tmp_path_factory.mktemp("home")
    result = subprocess.run(
        [str(CDK), "synth", "--quiet", "--no-notices", "-c", "hycloud:tracing=true", "--output", str(out)],
        cwd=ROOT,
        env=_no_credentials_env(home),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-5000:]
    return out


def _templates(out: Path) -> dict[str, dict]:
    manifest = json.loads((out / "manifest.json").read_text())
    return {
        name: json.loads((out / art["properties"]["templateFile"]).read_text())
        for name, art in manifest["artifacts"].items()
        if art["type"] == "aws:cloudformation:stack"
    }


def test_a_first_synth_needs_no_credentials_and_looks_nothing_up(assembly):
    manifest = json.loads((assembly / "manifest.json").read_text())
    assert manifest.get("missing", []) == []
    templates = _templates(assembly)
    assert set(templates) == {"HyCloud-Instance", "HyCloud-Instance-us-west-2", "HyCloud-Instance-eu-west-1"}
    functions = [
        r for t in templates.values() for r in t["Resources"].values() if r["Type"] == "AWS::Lambda::Function"
    ]
    assert functions and all(f["Properties"]["TracingConfig"] == {"Mode": "Active"} for f in functions)


def _fake_arn(value: Any, region: str) -> str:
    """A substitution's value as the ARN it becomes on deploy (a function, or its warm alias)."""
    if isinstance(value, str):
        return value
    if "Fn::GetAtt" in value:
        return f"arn:aws:lambda:{region}:{ACCOUNT}:function:{value['Fn::GetAtt'][0]}"
    return f"arn:aws:lambda:{region}:{ACCOUNT}:function:{value['Ref']}:warm"


def _inlined_machines(out: Path) -> dict[str, dict]:
    """Every state machine of every stack with its definition read from its asset, placeholders
    filled, as a resource cfn-lint validates; plus the canary, one of them broken."""
    manifest = json.loads((out / "manifest.json").read_text())
    resources: dict[str, dict] = {}
    for stack, template in _templates(out).items():
        region = manifest["artifacts"][stack]["environment"].rsplit("/", 1)[1]
        for name, res in template["Resources"].items():
            if res["Type"] != "AWS::StepFunctions::StateMachine":
                continue
            props = res["Properties"]
            if "DefinitionString" in props:  # inlined when the Map is capped (concurrency.py)
                text = props["DefinitionString"]
            else:
                text = (out / f"asset.{props['DefinitionS3Location']['Key']}").read_text()
            for key, value in props.get("DefinitionSubstitutions", {}).items():
                text = text.replace("${" + key + "}", _fake_arn(value, region))
            assert "${" not in text, (stack, name)
            resources[f"{stack.replace('-', '')}{name}"] = {
                "Type": "AWS::StepFunctions::StateMachine",
                "Properties": {
                    "RoleArn": f"arn:aws:iam::{ACCOUNT}:role/StepFunctions",
                    "Definition": json.loads(text),
                },
            }
    canary = copy.deepcopy(next(iter(resources.values())))
    first = canary["Properties"]["Definition"]["StartAt"]
    canary["Properties"]["Definition"]["States"][first]["Type"] = "Taks"
    return {**resources, CANARY: canary}


# W3005: CDK adds DependsOn on a role that a GetAtt already orders; redundant, harmless. W3010: with
# a concrete account the VPC takes its zones from cdk.json's context (`hycloud:availabilityZones`).
IGNORED = {"W3005", "W3010"}


def _cfn_lint_findings(*paths: Path) -> tuple[list[dict], str]:
    """cfn-lint's errors and warnings, but for IGNORED (informational findings are not kept)."""
    cfn_lint = str(Path(sys.executable).parent / "cfn-lint")
    result = subprocess.run(
        [cfn_lint, "--format", "json", "--", *map(str, paths)], capture_output=True, text=True
    )
    found = json.loads(result.stdout or "[]")
    kept = [f for f in found if f["Level"] in ("Error", "Warning") and f["Rule"]["Id"] not in IGNORED]
    return kept, result.stderr


def test_cfn_lint_finds_no_error_or_warning_and_every_state_machine_is_valid_asl(assembly, tmp_path):
    machines = _inlined_machines(assembly)
    assert len(machines) == 2 * 2 + 5 + 1  # two per data instance, five at home, the canary
    inlined = tmp_path / "statemachines.json"
    inlined.write_text(json.dumps({"AWSTemplateFormatVersion": "2010-09-09", "Resources": machines}))
    templates = sorted(assembly.glob("*.template.json"))
    errors, stderr = _cfn_lint_findings(*templates, inlined)
    canary = [e for e in errors if e["Location"]["Path"][:2] == ["Resources", CANARY]]
    assert {e["Rule"]["Id"] for e in canary} == {"E3601"}, "the broken definition was not refused"
    assert [e for e in errors if e not in canary] == [], json.dumps(errors, indent=1)[:5000] + stderr
