"""moto's DynamoDB queries read one partition, as DynamoDB does, instead of sorting the whole table.

moto 5's ``Table.query`` on the base table calls ``all_items()``, which sorts every item of the
table, then keeps those of the asked partition: a query costs O(n log n) in the table's size, and
a module of unit tests that writes a few thousand records spends most of its time there (the
fsspec abstract suite: 150 of 650 s). Here a base-table query with a hash key sees only its
partition's items; moto then filters and sorts them exactly as before, so answers are unchanged
(tests/unit/test_moto_partitions.py compares both on random tables). Scans and index queries are
untouched.
"""

from __future__ import annotations

import functools
import threading

_ASKED = threading.local()  # the (table, hash key) of the query running on this thread, if any


def install() -> None:
    """Patch moto's Table once; a moto without the attributes this relies on is left as it is."""
    try:
        from moto.dynamodb.models.table import Table
    except ImportError:
        return
    if getattr(Table, "_hycloud_partitioned", False) or not hasattr(Table, "all_items"):
        return
    whole_table, query = Table.all_items, Table.query

    @functools.wraps(whole_table)
    def all_items(self):
        asked = getattr(_ASKED, "partition", None)
        if asked is None or asked[0] is not self:
            return whole_table(self)
        return list(self.items.get(asked[1], {}).values())

    @functools.wraps(query)
    def partition_query(self, hash_key, *args, **kwargs):
        index_name = args[6] if len(args) > 6 else kwargs.get("index_name")
        if hash_key is None or index_name or not self.range_key_attr:
            return query(self, hash_key, *args, **kwargs)
        _ASKED.partition = (self, hash_key)
        try:
            return query(self, hash_key, *args, **kwargs)
        finally:
            _ASKED.partition = None

    Table.all_items, Table.query = all_items, partition_query
    Table._hycloud_partitioned = True
