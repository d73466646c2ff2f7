"""Every EFS file system has its lifecycle policy and every content bucket its tiering rules, as
cdk.json's context (or an override) asks, in every stack the app builds (storage_tiers.py)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import aws_cdk as cdk
import pytest
from aws_cdk.assertions import Template

from hycloud_infra.app_stacks import build_stacks

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "infra" / "local" / "lambda_executor"))

from hycloud_local_lambda.efs_lifecycle import lifecycle_error  # noqa: E402

ACCOUNT = "000000000000"
TIERED = {"objects/", "blocks/", "segments/"}


def _templates(layer: Path, **context: object) -> list[Template]:
    """Templates of every stack: home, data instances and (with `hycloud:standby`) the standby."""
    (layer / "python").mkdir(parents=True, exist_ok=True)
    (layer / "python" / "placeholder.py").write_text("")
    ctx = {
        **json.loads((ROOT / "cdk.json").read_text())["context"],
        "hycloud:standby": "us-west-2",
        **context,
    }
    app = cdk.App(context=ctx)
    build_stacks(app, root=ROOT, layer_dir=layer, account=ACCOUNT)
    stacks = [s for s in app.node.children if isinstance(s, cdk.Stack)]
    assert len(stacks) == 4  # home, two data instances, standby
    return [Template.from_stack(s) for s in stacks]


def _file_systems(templates: list[Template]) -> list[dict]:
    found = [fs for t in templates for fs in t.find_resources("AWS::EFS::FileSystem").values()]
    assert len(found) == 4  # one per stack
    return [fs["Properties"] for fs in found]


def _policies(props: dict) -> dict[str, str]:
    """The file system's lifecycle policies as one mapping (each entry holds one transition)."""
    entries = props["LifecyclePolicies"]
    assert all(len(e) == 1 for e in entries)
    return {k: v for e in entries for k, v in e.items()}


def _content_rules(templates: list[Template]) -> list[list[dict]]:
    """The lifecycle rules of each content bucket (the one whose rules expire `shares/`)."""
    out = []
    for t in templates:
        for bucket in t.find_resources("AWS::S3::Bucket").values():
            rules = bucket["Properties"].get("LifecycleConfiguration", {}).get("Rules", [])
            if any(r.get("Prefix") == "shares/" for r in rules):
                out.append(rules)
    assert len(out) == 4  # home, two data instances, standby
    return out


def _tier_rules(rules: list[dict]) -> dict[str, dict]:
    return {r["Prefix"]: r for r in rules if r.get("Transitions")}


@pytest.fixture(scope="module")
def defaults(tmp_path_factory) -> list[Template]:
    return _templates(tmp_path_factory.mktemp("layer"))


def test_every_file_system_goes_to_ia_then_archive_and_back_on_access(defaults):
    for props in _file_systems(defaults):
        assert _policies(props) == {
            "TransitionToIA": "AFTER_30_DAYS",
            "TransitionToArchive": "AFTER_180_DAYS",
            "TransitionToPrimaryStorageClass": "AFTER_1_ACCESS",
        }
        assert props["ThroughputMode"] == "elastic"  # Archive needs Elastic throughput
        assert lifecycle_error(props) is None  # what AWS accepts (the local provider's check)


def test_every_content_bucket_tiers_contents_and_blocks_by_intelligent_tiering(defaults):
    for rules in _content_rules(defaults):
        tiered = _tier_rules(rules)
        assert set(tiered) == TIERED
        for rule in tiered.values():
            assert rule["Status"] == "Enabled"
            assert rule["Transitions"] == [{"StorageClass": "INTELLIGENT_TIERING", "TransitionInDays": 0}]
            assert rule["ObjectSizeGreaterThan"] == 128 * 1024 - 1  # smaller objects never tier
        # short-lived prefixes keep expiring, never tiered
        assert {r["Prefix"] for r in rules if "ExpirationInDays" in r} == {
            "shares/",
            "staging/",
            "relay/",
            "layouts/",
        }


def test_segments_of_packed_files_are_tiered_like_contents(defaults):
    """Packed cold small files (docs/SEGMENTS.md) go to Intelligent-Tiering on day 0, when over 128 KiB."""
    for rules in _content_rules(defaults):
        [rule] = [r for r in rules if r.get("Prefix") == "segments/"]
        assert rule["Id"] == "tier-segments" and rule["Status"] == "Enabled"
        assert rule["Transitions"] == [{"StorageClass": "INTELLIGENT_TIERING", "TransitionInDays": 0}]
        assert rule["ObjectSizeGreaterThan"] == 128 * 1024 - 1
        assert "ExpirationInDays" not in rule  # only the cleaner deletes a segment


def test_policies_follow_the_context(tmp_path):
    templates = _templates(
        tmp_path,
        **{
            "hycloud:efsTransitionToIA": "AFTER_7_DAYS",
            "hycloud:efsTransitionToArchive": "none",
            "hycloud:s3Tiering": "lifecycle",
        },
    )
    for props in _file_systems(templates):
        assert _policies(props) == {
            "TransitionToIA": "AFTER_7_DAYS",
            "TransitionToPrimaryStorageClass": "AFTER_1_ACCESS",
        }
    for rules in _content_rules(templates):
        tiered = _tier_rules(rules)
        assert set(tiered) == TIERED
        for rule in tiered.values():
            assert rule["Transitions"] == [
                {"StorageClass": "STANDARD_IA", "TransitionInDays": 30},
                {"StorageClass": "GLACIER_IR", "TransitionInDays": 90},
            ]


def test_tiers_can_be_turned_off_and_bad_values_are_refused(tmp_path):
    off = {
        "hycloud:efsTransitionToIA": "none",
        "hycloud:efsTransitionToArchive": "none",
        "hycloud:s3Tiering": "none",
    }
    templates = _templates(tmp_path / "off", **off)
    assert all("LifecyclePolicies" not in props for props in _file_systems(templates))
    assert all(not _tier_rules(rules) for rules in _content_rules(templates))
    with pytest.raises(ValueError, match="s3Tiering"):
        _templates(tmp_path / "bad", **{"hycloud:s3Tiering": "glacier"})
    with pytest.raises(ValueError, match="must be later than"):  # EFS refuses Archive before IA
        _templates(
            tmp_path / "order",
            **{
                "hycloud:efsTransitionToIA": "AFTER_90_DAYS",
                "hycloud:efsTransitionToArchive": "AFTER_60_DAYS",
            },
        )
