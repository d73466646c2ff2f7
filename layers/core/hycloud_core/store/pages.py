"""Reading the single table page after page, and deleting from it in bounded rounds (records.py
holds its key design)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from decimal import Decimal
from itertools import batched
from typing import Any

BATCH_GET = 100  # keys of one BatchGetItem


def plain(item: dict[str, Any]) -> dict[str, Any]:
    """DynamoDB returns Decimal; callers want int/float, inside maps and lists too (a coded
    version's layout, read back and written into a link file as JSON)."""
    return {k: _number(v) for k, v in item.items()}


def _number(value: Any) -> Any:
    if isinstance(value, Decimal):
        return int(value) if value == int(value) else float(value)
    if isinstance(value, dict):
        return {k: _number(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_number(v) for v in value]
    return value


def query_items(
    table: Any, cond: Any, consistent: bool = False, fields: Sequence[str] = ()
) -> Iterator[dict[str, Any]]:
    """Every item a key condition matches, page after page, as stored (numbers stay Decimal, to
    be written back as they were); `fields`: only those attributes."""
    kwargs: dict[str, Any] = {"KeyConditionExpression": cond, "ConsistentRead": consistent}
    if fields:
        kwargs["ProjectionExpression"] = ", ".join(f"#f{i}" for i in range(len(fields)))
        kwargs["ExpressionAttributeNames"] = {f"#f{i}": f for i, f in enumerate(fields)}
    return _paged(table.query, kwargs)


def scan_items(table: Any, **kwargs: Any) -> Iterator[dict[str, Any]]:
    """Every item a scan with `kwargs` (a filter, a projection) finds, page after page, as stored."""
    return _paged(table.scan, kwargs)


def _paged(read: Callable[..., dict[str, Any]], kwargs: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """The items of a query or scan, its pages read one after another as they are consumed."""
    while True:
        page = read(**kwargs)
        yield from page["Items"]
        if "LastEvaluatedKey" not in page:
            return
        kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def in_rounds(
    keys: Sequence[dict[str, Any]], size: int, deadline: float | None, delete: Callable[[list[Any]], None]
) -> bool:
    """`delete` the keys `size` at a time, in order, until `deadline` (monotonic) has passed (one
    round at least, so every call gets on); whether all went. A bounded purge orders its keys so
    that what is left is still reached by the next call."""
    for start in range(0, len(keys), size):
        if start and deadline is not None and time.monotonic() > deadline:
            return False
        delete(list(keys[start : start + size]))
    return True


def batch_get(
    table: Any, keys: Sequence[dict[str, Any]], consistent: bool = False, projection: str | None = None
) -> list[dict[str, Any]]:
    """The items of `keys` that exist, as stored, BATCH_GET keys a request; the keys DynamoDB
    leaves unprocessed are asked for again."""
    out: list[dict[str, Any]] = []
    for chunk in batched(keys, BATCH_GET):
        ask: dict[str, Any] = {"Keys": list(chunk), "ConsistentRead": consistent}
        if projection:
            ask["ProjectionExpression"] = projection
        request: dict[str, Any] | None = {table.name: ask}
        while request:
            page = table.meta.client.batch_get_item(RequestItems=request)
            out += page["Responses"].get(table.name, [])
            request = page.get("UnprocessedKeys") or None
    return out


def query_all(
    table: Any, cond: Any, consistent: bool = False, fields: Sequence[str] = ()
) -> list[dict[str, Any]]:
    """Every item a key condition matches, page after page, as plain values."""
    return [plain(i) for i in query_items(table, cond, consistent, fields)]
