"""The trash through the controller and the upkeep function under moto: `DELETE /v1/dirs?recursive`
answers the item at once, GET /v1/trash lists it, POST /v1/trash/restore brings it back (409 on a
taken path, 400 for a malformed id, 404 for an unknown one), /v1/usage reports it apart, and the
upkeep's trash round purges it and then lets the collector take its content."""

from __future__ import annotations

import boto3

from hycloud_core import content
from tests.conftest import load_function
from tests.unit.functions.conftest import BUCKET, TABLE
from tests.unit.functions.test_versions_api import call, put  # noqa: F401 (a fixture)


def test_rm_r_goes_to_the_trash_and_comes_back(call):  # noqa: F811
    put(call, "/t.txt", b"top")
    assert call("POST", "/v1/dirs", body={"path": "/d"})[0] == 201
    put(call, "/d/a.txt", b"alpha")
    status, removed = call("DELETE", "/v1/dirs", query={"path": "/d", "recursive": "true"})
    assert status == 200 and removed["files"] == 1 and removed["trash"]["path"] == "/d"
    item = removed["trash"]["item"]
    assert call("GET", "/v1/stat", query={"path": "/d"})[0] == 404
    status, listed = call("GET", "/v1/trash")
    assert status == 200 and [i["item"] for i in listed["items"]] == [item]
    assert listed["retention_s"] == 30 * 86400
    assert call("GET", "/v1/usage", query={"source": "records"})[1]["trash"] == {
        "bytes": 5,
        "files": 1,
        "items": 1,
    }

    assert call("POST", "/v1/dirs", body={"path": "/d"})[0] == 201
    status, taken = call("POST", "/v1/trash/restore", body={"item": item})
    assert status == 409 and taken["error"]["code"] == "already-exists"
    assert call("POST", "/v1/trash/restore", body={"item": "nope"})[0] == 400
    assert call("POST", "/v1/trash/restore", body={"item": "1764400000000-0a1b2c3d"})[0] == 404
    status, back = call("POST", "/v1/trash/restore", body={"item": item, "to": "/d2"})
    assert status == 201 and back["entry"]["path"] == "/d2"
    assert call("GET", "/v1/files", query={"path": "/d2/a.txt"})[1] == b"alpha"

    status, deleted = call("DELETE", "/v1/files", query={"path": "/t.txt"})
    assert status == 200 and deleted["trash"]["type"] == "file"
    assert call("POST", "/v1/trash/empty", body={})[1] == {"emptied": [deleted["trash"]["item"]]}
    assert call("GET", "/v1/trash")[1]["items"] == []


def test_the_upkeep_trash_round_purges_then_collects(stores, lambda_context):
    from hycloud_core.config import InstanceConfig
    from hycloud_core.fs import FileSystem
    from hycloud_core.store.records import Records

    fs = FileSystem.deployed(InstanceConfig(), "u-1", boto3.client("s3"), Records(TABLE))
    data = b"L" * 5000
    h = content.hash_bytes(data)
    fs.s3.put_object(Bucket=BUCKET, Key=content.object_key(h), Body=data)
    fs.mkdir("/p")
    fs.commit_stored("/p/big", h, len(data))
    fs.trash_tree("/p")
    upkeep = load_function("maintenance")
    event = {"grace_s": 0, "walk": False, "trash": {"users": ["u-1"], "collect": True}}
    kept = upkeep.handler(event, lambda_context)
    assert kept["trash_purged"]["items"] == 0 and kept["collected"]["reclaimed"] == []
    event["trash"] |= {"users": ["someone-else"], "retention_s": 0}
    assert upkeep.handler(event, lambda_context)["collected"]["reclaimed"] == []
    event["trash"]["users"] = ["u-1"]
    purged = upkeep.handler(event, lambda_context)
    assert purged["trash_purged"]["items"] == 1 and purged["collected"]["reclaimed"] == [h]
