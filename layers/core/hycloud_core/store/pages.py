"""Reading the single table page after page (records.py holds its key design)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from decimal import Decimal
from typing import Any


def plain(item: dict[str, Any]) -> dict[str, Any]:
    """DynamoDB returns Decimal; callers want int/float."""
    out = {}
    for k, v in item.items():
        if isinstance(v, Decimal):
            out[k] = int(v) if v == int(v) else float(v)
        else:
            out[k] = v
    return out


def query_items(
    table: Any, cond: Any, consistent: bool = False, fields: Sequence[str] = ()
) -> Iterator[dict[str, Any]]:
    """Every item a key condition matches, page after page, as stored (numbers stay Decimal, to
    be written back as they were); `fields`: only those attributes."""
    kwargs: dict[str, Any] = {"KeyConditionExpression": cond, "ConsistentRead": consistent}
    if fields:
        kwargs["ProjectionExpression"] = ", ".join(f"#f{i}" for i in range(len(fields)))
        kwargs["ExpressionAttributeNames"] = {f"#f{i}": f for i, f in enumerate(fields)}
    while True:
        page = table.query(**kwargs)
        yield from page["Items"]
        if "LastEvaluatedKey" not in page:
            return
        kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def query_all(
    table: Any, cond: Any, consistent: bool = False, fields: Sequence[str] = ()
) -> list[dict[str, Any]]:
    """Every item a key condition matches, page after page, as plain values."""
    return [plain(i) for i in query_items(table, cond, consistent, fields)]
