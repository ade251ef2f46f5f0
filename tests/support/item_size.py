"""DynamoDB's size of an item, as it counts it against the 400 KB limit: attribute names plus values (strings as
UTF-8, binary raw, numbers by their digits), and every item of a table to measure."""

from __future__ import annotations

from typing import Any

ITEM_LIMIT = 400 * 1024


def item_size(item: dict[str, Any]) -> int:
    size = 0
    for name, value in item.items():
        size += len(name.encode())
        raw = getattr(value, "value", value)
        size += len(raw) if isinstance(raw, bytes) else len(str(raw).encode())
    return size


def every_item(table: Any) -> list[dict[str, Any]]:
    """Every item of a boto3 Table resource, page after page of its scan."""
    items: list[dict[str, Any]] = []
    kwargs: dict[str, Any] = {}
    while True:
        page = table.scan(**kwargs)
        items += page["Items"]
        if "LastEvaluatedKey" not in page:
            return items
        kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]
