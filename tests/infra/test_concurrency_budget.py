"""The job settings fit the account's Lambda concurrency in each region (`hycloud:accountConcurrency`,
default 10: what AWS may give a new account): job workers times the relay workflow's range Map,
plus what the controller and the dispatcher keep, never exceed it."""

from __future__ import annotations

import json
from pathlib import Path

import aws_cdk as cdk
import pytest
from aws_cdk.assertions import Template

from hycloud_infra.app_stacks import build_stacks
from hycloud_infra.concurrency import KEPT

pytestmark = pytest.mark.slow  # each test synthesizes every stack of three regions: out of `make fast`

ROOT = Path(__file__).resolve().parents[2]


def _stacks(layer: Path, account: str, **context: object) -> tuple[cdk.App, list[cdk.Stack]]:
    (layer / "python").mkdir(exist_ok=True)
    (layer / "python" / "placeholder.py").write_text("")
    app = cdk.App(context={**json.loads((ROOT / "cdk.json").read_text())["context"], **context})
    build_stacks(app, root=ROOT, layer_dir=layer, account=account)
    return app, [s for s in app.node.children if isinstance(s, cdk.Stack)]


def _map_concurrency(app: cdk.App, stack: cdk.Stack) -> list[int]:
    """MaxConcurrency of every Map state of the stack's relay workflows (inline or an asset)."""
    out = Path(app.synth().directory)
    found = []
    for machine in Template.from_stack(stack).find_resources("AWS::StepFunctions::StateMachine").values():
        props = machine["Properties"]
        if "DefinitionString" in props:
            text = props["DefinitionString"]
        else:
            text = (out / f"asset.{props['DefinitionS3Location']['Key']}").read_text()
        states = json.loads(text)["States"]
        found += [s["MaxConcurrency"] for s in states.values() if s["Type"] == "Map"]
    return found


def _settings(stack: cdk.Stack) -> list[dict[str, str]]:
    functions = Template.from_stack(stack).find_resources("AWS::Lambda::Function")
    return [
        f["Properties"].get("Environment", {}).get("Variables", {})
        for name, f in functions.items()
        if name.startswith(("Controller", "Dispatcher"))
    ]


def _fits(app: cdk.App, stacks: list[cdk.Stack], quota: int) -> None:
    for stack in stacks:
        maps = _map_concurrency(app, stack)
        assert maps, stack.stack_name  # every stack runs relay jobs
        for env in _settings(stack):
            workers = int(env["HYCLOUD_MAX_RELAY_WORKERS"])
            assert int(env["HYCLOUD_JOB_CAPACITY"]) <= workers
            assert workers * max(maps) + KEPT <= quota, (stack.stack_name, workers, maps)


@pytest.mark.parametrize("account", ["123456789012", None])
def test_the_default_settings_fit_a_new_accounts_quota_of_ten(tmp_path, account):
    app, stacks = _stacks(tmp_path, account, **{"hycloud:standby": "ap-south-1"})
    _fits(app, stacks, 10)


def test_a_raised_quota_keeps_the_usual_settings(tmp_path):
    app, stacks = _stacks(tmp_path, "123456789012", **{"hycloud:accountConcurrency": 1000})
    _fits(app, stacks, 1000)
    home = next(s for s in stacks if s.stack_name == "HyCloud-Instance")
    assert _map_concurrency(app, home)[0] == 8
    for env in _settings(home):
        assert (env["HYCLOUD_JOB_CAPACITY"], env["HYCLOUD_MAX_RELAY_WORKERS"]) == ("16", "32")


def test_the_local_cloud_has_no_quota_and_keeps_its_settings(tmp_path):
    app, stacks = _stacks(tmp_path, "000000000000")
    home = next(s for s in stacks if s.stack_name == "HyCloud-Instance")
    assert _map_concurrency(app, home)[0] == 8
    for env in _settings(home):
        assert "HYCLOUD_JOB_CAPACITY" not in env and "HYCLOUD_MAX_RELAY_WORKERS" not in env
