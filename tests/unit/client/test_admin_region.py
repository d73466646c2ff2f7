"""Admin commands go to the deployment's home region, read from its outputs, not the profile's."""

from __future__ import annotations

import json

import boto3

from hycloud import admin

OUTPUTS = {
    "HyCloud-Instance": {
        "ApiUrl": "https://abc.execute-api.eu-central-1.amazonaws.com/v1/",
        "TableName": "HyCloud-Instance-StoresTable5C211671-1",
        "RelayStateMachineArn": "arn:aws:states:eu-central-1:123456789012:stateMachine:Relay",
    },
    "HyCloud-Instance-us-west-2": {"RelayStateMachineArn": "arn:aws:states:us-west-2:1:stateMachine:R"},
}


def test_the_home_region_is_read_from_the_home_stacks_outputs(tmp_path, monkeypatch):
    monkeypatch.setenv("AWS_DEFAULT_REGION", "ap-south-1")  # the admin's profile says otherwise
    path = tmp_path / "outputs.json"
    path.write_text(json.dumps(OUTPUTS))
    assert admin.region_of(OUTPUTS["HyCloud-Instance"]) == "eu-central-1"
    try:
        admin.use_outputs_region(path)
        assert boto3.client("dynamodb").meta.region_name == "eu-central-1"
    finally:
        boto3.DEFAULT_SESSION = None


def test_outputs_without_an_arn_leave_the_profile_region(tmp_path, monkeypatch):
    monkeypatch.setenv("AWS_DEFAULT_REGION", "ap-south-1")
    path = tmp_path / "outputs.json"
    path.write_text(json.dumps({"S": {"ApiUrl": "x", "TableName": "t"}}))
    admin.use_outputs_region(path)
    assert boto3.client("dynamodb").meta.region_name == "ap-south-1"
