"""Reading JSON documents of any shape (Kubernetes objects, event details): a missing level, or one of another type
than expected, reads as absent instead of raising."""

from __future__ import annotations

from typing import Any


def dig(value: Any, *keys: str) -> Any:
    """value[k1][k2]…, or None where a level is missing or not an object."""
    for key in keys:
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    return value


def list_of(value: Any) -> list[Any]:
    """`value` when it is a list, else []."""
    return value if isinstance(value, list) else []
