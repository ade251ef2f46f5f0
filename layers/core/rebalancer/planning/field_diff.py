"""Field-by-field differences between two API shapes (plans and `rebalancer diff` report them)."""

from __future__ import annotations

from typing import Any


def _flat(value: Any, prefix: str) -> dict[str, Any]:
    """A nested dict as {dotted path: leaf}; lists are leaves."""
    if not isinstance(value, dict):
        return {prefix: value}
    out: dict[str, Any] = {}
    for k, v in value.items():
        out.update(_flat(v, f"{prefix}.{k}" if prefix else k))
    return out


def field_diff(before: dict[str, Any], after: dict[str, Any]) -> list[tuple[str, Any, Any]]:
    """(path, before, after) for every leaf that differs; None stands for absent."""
    a, b = _flat(before, ""), _flat(after, "")
    return [(k, a.get(k), b.get(k)) for k in sorted(a.keys() | b.keys()) if a.get(k) != b.get(k)]
