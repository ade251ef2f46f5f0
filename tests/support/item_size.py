"""DynamoDB's size of an item, as it counts it against the 400 KB limit: attribute names plus values (strings as
UTF-8, binary raw, numbers by their digits)."""

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
