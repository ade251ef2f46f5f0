"""Hypothesis strategies for any response botocore's model allows: every required member present, every optional
member absent or present, enums from the model, numbers within the model's min/max, lists and maps of 0-2 entries.
Strings are short and plain (patterns are not generated): the snapshot must not care about their form.

Used to show that what collect reads accepts every response shape the SDK allows (or refuses it in one line naming
the field)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from botocore.model import ListShape, MapShape, Shape, StringShape, StructureShape
from hypothesis import strategies as st

from rebalancer_tools.packaging.sdk_model import sagemaker_model

MAX_DEPTH = 5
_TEXT = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-.", min_size=1, max_size=12)


def _number_bounds(shape: Shape) -> tuple[int | None, int | None]:
    meta = shape.metadata
    return meta.get("min"), meta.get("max")


def strategy(shape: Shape, depth: int = 0, overrides: dict[str, st.SearchStrategy[Any]] | None = None
             ) -> st.SearchStrategy[Any]:
    """Values of `shape`. `overrides` replaces the strategy of members with those names, at any depth (e.g. to
    draw InstanceType from the model's enum rather than free text)."""
    overrides = overrides or {}
    t = shape.type_name
    if isinstance(shape, StructureShape):
        required = set(shape.required_members)
        if depth >= MAX_DEPTH:
            members = {n: m for n, m in shape.members.items() if n in required}
        else:
            members = dict(shape.members)

        def member(name: str, m: Shape) -> st.SearchStrategy[Any]:
            return overrides[name] if name in overrides else strategy(m, depth + 1, overrides)

        return st.fixed_dictionaries(
            {n: member(n, m) for n, m in members.items() if n in required},
            optional={n: member(n, m) for n, m in members.items() if n not in required})
    if isinstance(shape, ListShape):
        if depth >= MAX_DEPTH:
            return st.just([])
        return st.lists(strategy(shape.member, depth + 1, overrides), max_size=2)
    if isinstance(shape, MapShape):
        if depth >= MAX_DEPTH:
            return st.just({})
        return st.dictionaries(_TEXT, strategy(shape.value, depth + 1, overrides), max_size=2)
    if isinstance(shape, StringShape):
        return st.sampled_from(shape.enum) if shape.enum else _TEXT
    if t in ("integer", "long"):
        lo, hi = _number_bounds(shape)
        return st.integers(min_value=lo if lo is not None else -(2**31), max_value=hi if hi is not None else 2**31)
    if t in ("float", "double"):
        lo, hi = _number_bounds(shape)
        return st.floats(min_value=lo, max_value=hi, allow_nan=False, allow_infinity=False)
    if t == "boolean":
        return st.booleans()
    if t == "timestamp":
        return st.datetimes(min_value=datetime(2020, 1, 1), max_value=datetime(2030, 1, 1), timezones=st.just(UTC))
    if t == "blob":
        return st.binary(max_size=8)
    raise NotImplementedError(f"shape type {t}")


def output_of(operation: str, overrides: dict[str, st.SearchStrategy[Any]] | None = None
              ) -> st.SearchStrategy[dict[str, Any]]:
    out: st.SearchStrategy[dict[str, Any]] = strategy(sagemaker_model().operation_model(operation).output_shape,
                                                      overrides=overrides)
    return out
