"""`hycloud usage` says which small-file threshold is in force, chosen or configured, and why each
kind of file lives where it does."""

from __future__ import annotations

from rich.console import Console

from hycloud.cli import usage as cli
from tests.unit.client.test_usage_cli import report


def _shown(threshold: dict | None) -> str:
    console = Console(record=True, width=200)
    cli.show_usage({**report(), **({"threshold": threshold} if threshold else {})}, False, console)
    return console.export_text()


def test_a_threshold_chosen_for_the_user_is_shown_with_its_reason_and_the_placement_rules():
    text = _shown(
        {
            "threshold": 512 * 1024,
            "source": "user",
            "reason": "chose 512 KiB: 512 KiB bills $0.0002/month",
            "at": 1,
        }
    )
    assert "small-file threshold 512.00 KiB, chosen by cost for you: chose 512 KiB" in text
    assert "Why each kind of file lives where" in text
    assert "files up to 512.00 KiB" in text and "files over 512.00 KiB" in text


def test_a_fixed_threshold_says_the_operator_fixed_it_and_an_older_controller_shows_none():
    fixed = {"threshold": 2 << 20, "source": "configured", "reason": "fixed by the operator", "at": None}
    assert "small-file threshold 2.00 MiB, fixed by the operator" in _shown(fixed)
    assert "small-file threshold" not in _shown(None)


def test_admin_usage_shows_the_deployment_s_chosen_threshold(moto_table):
    moto_table.put_item(
        Item={
            "pk": "THRESHOLD",
            "sk": "DEPLOYMENT",
            "threshold": 131072,
            "at": 1,
            "reason": "chose 128 KiB: ...",
        }
    )
    console = Console(record=True, width=200)
    cli.admin_usage_command(moto_table.name, False, console)
    assert "deployment's small-file threshold 128.00 KiB: chose 128 KiB" in console.export_text()
