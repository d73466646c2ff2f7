"""How Merkle nodes are stored in DynamoDB, one item per node (no AWS calls here).

Key design::

    pk = "MERKLE#<user>#<replica>"      replica: "client" or the instance's region
    sk = "<depth:03d>#<path>"            "000#/", "001#/docs", "002#/docs/a.txt",
                                         "003#/docs/big.bin/#0" (blocks sit below their file)

Attributes: kind, hash (binary), mtime (number), children (count), index (blocks).

One exchange round for parent p is one Query per differing parent:
``pk = :pk AND begins_with(sk, children_prefix(p))``. The depth prefix makes
the prefix match exactly the direct children: anything deeper has a larger
depth, and a depth-d item whose path starts with "p/" is a child of p. Blocks
use the "/#<i>" suffix, which no child path of a file can collide with since
files have no children. A file update rewrites its own item and the O(depth)
ancestor items whose hashes change; a conditional write on the old root hash
detects a concurrent update.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from decimal import Decimal
from typing import Any

from hycloud_core.merkle.entries import depth_of
from hycloud_core.merkle.exchange import NodeSummary
from hycloud_core.merkle.tree import Node


def partition_key(user: str, replica: str) -> str:
    if "#" in user or "#" in replica:
        raise ValueError("user and replica ids must not contain '#'")
    return f"MERKLE#{user}#{replica}"


def sort_key(path: str) -> str:
    return f"{depth_of(path):03d}#{path}"


def children_prefix(path: str) -> str:
    """begins_with() argument selecting exactly the direct children of `path`."""
    return f"{depth_of(path) + 1:03d}#{path if path == '/' else path + '/'}"


def to_item(user: str, replica: str, node: Node) -> dict[str, Any]:
    """A node as a DynamoDB item in the resource API's types (Decimal numbers, bytes binaries)."""
    item: dict[str, Any] = {
        "pk": partition_key(user, replica),
        "sk": sort_key(node.path),
        "kind": node.kind,
        "hash": node.hash,
        "mtime": Decimal(repr(node.mtime)),
        "children": len(node.children),
    }
    if node.index is not None:
        item["index"] = node.index
    return item


def items_from_tree(user: str, replica: str, root: Node) -> Iterator[dict[str, Any]]:
    for node in root.walk():
        yield to_item(user, replica, node)


def summary_from_item(item: Mapping[str, Any]) -> NodeSummary:
    path = str(item["sk"]).split("#", 1)[1]
    index = item.get("index")
    return NodeSummary(
        path,
        str(item["kind"]),
        bytes(item["hash"]),
        float(item["mtime"]),
        int(item.get("children", 0)),
        None if index is None else int(index),
    )


def reply_from_items(parent: str, items: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Turn one Query's items into the exchange reply for `parent`."""
    return [summary_from_item(i).to_dict() for i in items]
