"""Foundation, end to end: the deployed app through the REST API with the real client."""

from __future__ import annotations

import hashlib
import json
import os

import pytest
import requests

from hycloud_core import content
from tests.e2e.executions import finished
from tests.e2e.invariants import record_key

pytestmark = pytest.mark.e2e


def test_small_file_round_trip_lands_on_efs_and_in_dynamodb(deployment, alice, tmp_path):
    data = os.urandom(300_000)
    src = tmp_path / "in.bin"
    src.write_bytes(data)
    alice.cli("mkdir", "-p", "/docs/2026")
    alice.cli("put", str(src), "/docs/2026/in.bin")
    dst = tmp_path / "out.bin"
    alice.cli("get", "/docs/2026/in.bin", str(dst))
    assert hashlib.sha256(dst.read_bytes()).digest() == hashlib.sha256(data).digest()

    on_efs = deployment.efs_root() / "ns" / alice.id / "docs" / "2026" / "in.bin"
    assert on_efs.read_bytes() == data

    table = deployment.outputs["TableName"]
    item = deployment.client("dynamodb").get_item(
        TableName=table, Key=record_key(deployment, alice.id, "/docs/2026/in.bin")
    )["Item"]
    assert item["sha256"]["S"] == hashlib.sha256(data).hexdigest() and item["size"]["N"] == str(len(data))

    listing = json.loads(alice.cli("--json", "ls", "/docs/2026").stdout)
    assert [(e["name"], e["size"]) for e in listing] == [("in.bin", len(data))]


def test_another_users_key_cannot_read_it(alice, bob):
    alice.sdk().put_bytes("/private.txt", b"alice only")
    result = bob.cli("get", "/private.txt", "/tmp/should-not-exist", check=False)
    assert result.returncode == 5 and "not-found" in result.stderr
    for sneaky in (f"/../{alice.id}/private.txt", f"/%2e%2e/{alice.id}/private.txt"):
        response = requests.get(
            f"{bob.deployment.api_url}/v1/files",
            params={"path": sneaky},
            headers={"Authorization": f"Bearer {bob.key}"},
            timeout=30,
        )
        assert response.status_code == 400 and response.json()["error"]["code"] == "invalid-path"


@pytest.mark.parametrize(
    "headers,status", [({}, 401), ({"Authorization": "Bearer hck_" + "0" * 16 + "_" + "x" * 43}, 403)]
)
def test_requests_without_a_valid_key_are_refused(deployment, headers, status):
    response = requests.get(
        f"{deployment.api_url}/v1/dirs", params={"path": "/"}, headers=headers, timeout=30
    )
    assert response.status_code == status
    assert response.json()["error"]["code"] in ("missing-key", "invalid-key")


def test_relay_state_machine_copies_s3_object_into_efs_cache(deployment):
    s3, sfn = deployment.client("s3"), deployment.client("stepfunctions")
    data = os.urandom(3 * 1024 * 1024 + 17)
    key = f"test/{hashlib.sha256(data).hexdigest()}"
    s3.put_object(Bucket=deployment.outputs["BucketName"], Key=key, Body=data)
    name = f"relaytest#{key.replace('/', '#')}"
    run = sfn.start_execution(
        stateMachineArn=deployment.outputs["RelayStateMachineArn"],
        input=json.dumps({"key": key, "cache_name": name, "content_hash": content.hash_bytes(data)}),
    )
    desc = finished(sfn, run["executionArn"], timeout_s=120)
    assert desc["status"] == "SUCCEEDED", desc
    assert json.loads(desc["output"])["hit"] is False
    assert (deployment.efs_root() / "cache" / name).read_bytes() == data
