"""The in-process cloud answers the real client SDK as the deployed API does: binary bodies byte
for byte, errors as the client's exceptions, keys checked. So tests built on it cannot pass
because requests never reached the controller."""

from __future__ import annotations

import hashlib

import boto3
import pytest

from hycloud.sdk import HyCloud
from hycloud_core.errors import ForbiddenError, NotFoundError, UnauthorizedError
from hycloud_core.store.users import Users
from tests.unit.inprocess_cloud import TABLE, inprocess_cloud  # noqa: F401 (a fixture)

# every byte value, and bytes that are not UTF-8 text: a text body would be mangled
BINARY = bytes(range(256)) * 3 + b"\xff\xfe\x00\x80" + hashlib.sha256(b"x").digest()


def test_binary_put_and_get_round_trip_byte_exact_through_the_controller(inprocess_cloud):  # noqa: F811
    client = HyCloud(inprocess_cloud.base, inprocess_cloud.key)
    served = inprocess_cloud.adapter.requests
    entry = client.put_bytes("/bin/all-bytes", BINARY, parents=True)
    assert entry["size"] == len(BINARY)
    assert client.get_bytes("/bin/all-bytes") == BINARY
    assert inprocess_cloud.adapter.requests >= served + 2
    user_id = Users(boto3.resource("dynamodb").Table(TABLE)).profile("alice")["id"]
    stored = inprocess_cloud.root / "efs" / "ns" / user_id / "bin" / "all-bytes"
    assert stored.read_bytes() == BINARY  # in the namespace folder the controller wrote


def test_missing_file_is_the_clients_not_found_error(inprocess_cloud):  # noqa: F811
    client = HyCloud(inprocess_cloud.base, inprocess_cloud.key)
    with pytest.raises(NotFoundError) as err:
        client.get_bytes("/no/such/file")
    assert err.value.status == 404 and err.value.code == "not-found"


@pytest.mark.parametrize(
    "key,error",
    [("nonsense", UnauthorizedError), ("hck_" + "0" * 16 + "_" + "B" * 43, ForbiddenError)],
)
def test_a_request_with_a_wrong_key_is_refused(inprocess_cloud, key, error):  # noqa: F811
    with pytest.raises(error) as err:
        HyCloud(inprocess_cloud.base, key).stat("/")
    assert err.value.status in (401, 403)


def test_a_cancelled_transaction_changes_nothing(inprocess_cloud):  # noqa: F811
    """The moto patch that spares the whole-table copy still undoes every item of a transaction
    that fails (leases and conditional writes rely on it)."""
    table = boto3.resource("dynamodb").Table(TABLE)
    table.put_item(Item={"pk": "T#kept", "sk": "X", "n": 1})
    client = boto3.client("dynamodb")  # typed attribute values, as the controller's records send
    with pytest.raises(client.exceptions.TransactionCanceledException):
        client.transact_write_items(
            TransactItems=[
                {"Put": {"TableName": TABLE, "Item": {"pk": {"S": "T#new"}, "sk": {"S": "X"}}}},
                {
                    "Update": {
                        "TableName": TABLE,
                        "Key": {"pk": {"S": "T#kept"}, "sk": {"S": "X"}},
                        "UpdateExpression": "SET n = :two",
                        "ExpressionAttributeValues": {":two": {"N": "2"}},
                    }
                },
                {
                    "ConditionCheck": {
                        "TableName": TABLE,
                        "Key": {"pk": {"S": "T#absent"}, "sk": {"S": "X"}},
                        "ConditionExpression": "attribute_exists(pk)",
                    }
                },
            ]
        )
    assert "Item" not in table.get_item(Key={"pk": "T#new", "sk": "X"})
    assert table.get_item(Key={"pk": "T#kept", "sk": "X"})["Item"]["n"] == 1
