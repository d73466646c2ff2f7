"""The quota line of `hycloud usage` and the deployment's quota defaults from CDK context."""

from hycloud.cli.usage import quota_line
from hycloud_infra.stacks.instance_stack import quota_defaults


def test_quota_line_names_use_and_limits():
    quota = {"bytes": {"used": 1024 * 1024, "limit": 10 * 1024 * 1024}, "files": {"used": 3, "limit": None}}
    assert quota_line(quota) == "quota: 1.00 MiB of 10.00 MiB, 3 of unlimited files"


def test_quota_defaults_come_from_context_and_are_unlimited_when_unset():
    context = {"hycloud:quotaBytes": "5000"}
    assert quota_defaults(context.get) == {"HYCLOUD_QUOTA_BYTES": "5000"}
    assert quota_defaults({}.get) == {}
