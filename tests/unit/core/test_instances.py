"""The controller's list of instances from its environment (docs/GEO.md)."""

from __future__ import annotations

import json

from hycloud_core import constants as c
from hycloud_core.instances import Instance, from_environment, instances

LISTED = [
    {"region": "us-west-2", "bucket": "b-west", "relayStateMachineArn": "r-w", "deltaStateMachineArn": "d-w"},
    {"region": "eu-west-1", "bucket": "b-eu", "relayStateMachineArn": "r-e", "deltaStateMachineArn": "d-e"},
]


def test_home_first_then_listed_in_order():
    found = instances("us-east-1", "b-home", "r-h", "d-h", json.dumps(LISTED))
    assert found == [
        Instance("us-east-1", "b-home", "r-h", "d-h", home=True),
        Instance("us-west-2", "b-west", "r-w", "d-w"),
        Instance("eu-west-1", "b-eu", "r-e", "d-e"),
    ]


def test_one_region_is_the_home_instance_alone(monkeypatch):
    monkeypatch.delenv(c.ENV_INSTANCES, raising=False)
    monkeypatch.setenv("AWS_REGION", "ap-south-1")
    monkeypatch.setenv(c.ENV_BUCKET, "only")
    (home,) = from_environment()
    assert (home.region, home.bucket, home.home) == ("ap-south-1", "only", True)


def test_environment_lists_data_instances(monkeypatch):
    monkeypatch.setenv(c.ENV_INSTANCES, json.dumps(LISTED))
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    assert [(i.region, i.home) for i in from_environment()] == [
        ("us-east-1", True),
        ("us-west-2", False),
        ("eu-west-1", False),
    ]
