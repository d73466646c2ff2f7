"""The partition-reading query of tests/moto_partitions.py answers exactly as moto's own does."""

from __future__ import annotations

import random

import boto3
import pytest
from boto3.dynamodb.conditions import Key
from moto import mock_aws
from moto.dynamodb.models.table import Table

from tests import moto_partitions


def _queries(table) -> list:
    """Forward, backward, by prefix, paged: what the stores ask of their table."""
    answers = []
    for pk in ("U#a", "U#b", "U#missing"):
        answers.append(table.query(KeyConditionExpression=Key("pk").eq(pk))["Items"])
        answers.append(table.query(KeyConditionExpression=Key("pk").eq(pk), ScanIndexForward=False)["Items"])
        cond = Key("pk").eq(pk) & Key("sk").begins_with("F#1")
        answers.append(table.query(KeyConditionExpression=cond)["Items"])
        page = table.query(KeyConditionExpression=Key("pk").eq(pk), Limit=7)
        answers.append((page["Items"], page.get("LastEvaluatedKey")))
        if "LastEvaluatedKey" in page:
            more = table.query(
                KeyConditionExpression=Key("pk").eq(pk), ExclusiveStartKey=page["LastEvaluatedKey"]
            )
            answers.append(more["Items"])
    answers.append(sorted(table.scan()["Items"], key=lambda i: (i["pk"], i["sk"])))
    return answers


@pytest.fixture
def table():
    with mock_aws():
        db = boto3.resource("dynamodb", region_name="us-east-1")
        made = db.create_table(
            TableName="t",
            KeySchema=[
                {"AttributeName": "pk", "KeyType": "HASH"},
                {"AttributeName": "sk", "KeyType": "RANGE"},
            ],
            AttributeDefinitions=[{"AttributeName": n, "AttributeType": "S"} for n in ("pk", "sk")],
            BillingMode="PAY_PER_REQUEST",
        )
        rng = random.Random(7)
        with made.batch_writer() as batch:
            for i in range(300):
                batch.put_item(
                    Item={"pk": rng.choice(["U#a", "U#b", "U#c"]), "sk": f"F#{rng.randrange(10**6)}", "n": i}
                )
        yield made


def test_answers_match_moto_own_query(table, monkeypatch):
    moto_partitions.install()
    patched = _queries(table)
    monkeypatch.setattr(Table, "all_items", Table.all_items.__wrapped__)
    monkeypatch.setattr(Table, "query", Table.query.__wrapped__)
    assert patched == _queries(table)
    assert len(patched[0]) > 50  # the partitions asked for are not empty
