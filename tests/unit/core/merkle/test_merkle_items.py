"""The DynamoDB key design answers each exchange round with one begins_with query per parent."""

import bisect
import json
from decimal import Decimal

from hypothesis import given, settings
from merkle_strategies import tree_pairs

from hycloud_core.merkle import LevelExchange, Responder, build_tree, compare
from hycloud_core.merkle.items import (
    children_prefix,
    items_from_tree,
    partition_key,
    reply_from_items,
    sort_key,
)


class QueryTable:
    """Items of one partition sorted by sk, queried the way DynamoDB does with begins_with."""

    def __init__(self, items):
        self.items = sorted(items, key=lambda i: i["sk"])
        self.keys = [i["sk"] for i in self.items]

    def begins_with(self, prefix: str):
        start = bisect.bisect_left(self.keys, prefix)
        out = []
        for item in self.items[start:]:
            if not item["sk"].startswith(prefix):
                break
            out.append(item)
        return out

    def answer(self, paths):
        reply = {}
        for parent in paths:
            if parent == "":
                reply[parent] = reply_from_items(parent, self.begins_with("000#/")[:1])
            else:
                reply[parent] = reply_from_items(parent, self.begins_with(children_prefix(parent)))
        return reply


def test_key_shapes():
    assert partition_key("alice", "eu-west-1") == "MERKLE#alice#eu-west-1"
    assert sort_key("/") == "000#/" and sort_key("/a/b") == "002#/a/b"
    assert children_prefix("/") == "001#/" and children_prefix("/a") == "002#/a/"


@settings(max_examples=60, deadline=None)
@given(pair=tree_pairs())
def test_queries_return_exactly_the_children_and_drive_the_exchange(pair):
    local, remote = map(build_tree, pair)
    items = list(items_from_tree("alice", "us-east-1", remote))
    assert all(isinstance(i["mtime"], Decimal) for i in items)
    table = QueryTable(items)
    direct = Responder(remote)
    for node in remote.walk():
        got = table.answer([node.path])[node.path]
        assert sorted(got, key=lambda s: s["path"]) == sorted(
            direct.answer([node.path])[node.path], key=lambda s: s["path"]
        )
    exchange = LevelExchange(local)
    while not exchange.done:
        exchange.receive(json.loads(json.dumps(table.answer(exchange.request()))))
    assert exchange.result() == compare(local, remote)
