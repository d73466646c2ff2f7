"""The small-file threshold's override: `hycloud:smallFileThresholdFixed` tells every function of
the instance that the configured threshold wins (cost/thresholds.py); without it nothing says so,
and the upkeep chooses by cost."""

from __future__ import annotations

from aws_cdk.assertions import Template

from tests.infra.stack import instance_stack

FIXED = "HYCLOUD_SMALL_FILE_THRESHOLD_FIXED"


def _envs(tmp_path, **context: object) -> dict[str, dict[str, str]]:
    _app, stack = instance_stack(tmp_path, **context)
    functions = Template.from_stack(stack).find_resources("AWS::Lambda::Function")
    return {k: f["Properties"].get("Environment", {}).get("Variables", {}) for k, f in functions.items()}


def test_a_fixed_threshold_reaches_the_controller_the_upkeep_and_the_bundle_job(tmp_path):
    envs = _envs(tmp_path, **{"hycloud:smallFileThresholdFixed": True, "hycloud:smallFileThreshold": 1 << 20})
    for prefix in ("Controller", "CacheUpkeep", "BundleJob"):
        [env] = [e for k, e in envs.items() if k.startswith(prefix)]
        assert (env[FIXED], env["HYCLOUD_SMALL_FILE_THRESHOLD"]) == ("true", str(1 << 20)), prefix


def test_by_default_nothing_is_fixed(tmp_path):
    assert not any(FIXED in env for env in _envs(tmp_path).values())
