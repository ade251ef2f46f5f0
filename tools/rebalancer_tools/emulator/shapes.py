"""Server-side request validation against botocore's SageMaker service model, as AWS does it.

botocore checks only required members, types and minimums on the client; AWS also checks maximums, enums and
patterns, and answers with one ValidationException listing every violation ("2 validation errors detected: ...").
Reading the limits from the model keeps them in step with the SDK (≤ 15 resource entries, BorrowLimit range, ...).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from functools import cache
from typing import Any

import regex  # type: ignore[import-untyped]  # the model's patterns use \p{L}-style classes that `re` lacks
from botocore.model import ListShape, MapShape, Shape, StringShape, StructureShape

from rebalancer_tools.emulator.errors import SerializationException, ValidationError
from rebalancer_tools.packaging.sdk_model import sagemaker_model


@cache
def _pattern(p: str) -> Any:
    return regex.compile(p)


def _camel(name: str) -> str:
    return name[:1].lower() + name[1:]


def _show(value: Any) -> str:
    if isinstance(value, list):
        return "[" + ", ".join(_show(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}={_show(v)}" for k, v in value.items()) + "}"
    return str(value)


class _Checker:
    def __init__(self) -> None:
        self.errors: list[str] = []
        self.type_errors: list[str] = []

    def fail(self, value: Any, path: str, constraint: str) -> None:
        shown = "null" if value is None else f"'{_show(value)}'"
        self.errors.append(f"Value {shown} at '{path}' failed to satisfy constraint: {constraint}")

    def check(self, shape: Shape, value: Any, path: str) -> None:
        kind = shape.type_name
        if kind == "structure":
            self._structure(shape, value, path)
        elif kind == "list":
            self._list(shape, value, path)
        elif kind == "map":
            self._map(shape, value, path)
        elif kind == "string":
            self._string(shape, value, path)
        elif kind in ("integer", "long"):
            if not isinstance(value, int) or isinstance(value, bool):
                self.type_errors.append(f"{path}: expected an integer, got {value!r}")
            else:
                self._range(shape, value, path)
        elif kind in ("float", "double"):
            if not isinstance(value, int | float) or isinstance(value, bool):
                self.type_errors.append(f"{path}: expected a number, got {value!r}")
            else:
                self._range(shape, value, path)
        elif kind == "boolean":
            if not isinstance(value, bool):
                self.type_errors.append(f"{path}: expected a boolean, got {value!r}")
        elif kind == "timestamp" and not isinstance(value, dt.datetime | int | float | str):
            self.type_errors.append(f"{path}: expected a timestamp, got {value!r}")

    def _structure(self, shape: Shape, value: Any, path: str) -> None:
        assert isinstance(shape, StructureShape)
        if not isinstance(value, Mapping):
            self.type_errors.append(f"{path or 'request'}: expected an object, got {value!r}")
            return
        for name in shape.required_members:
            if value.get(name) is None:
                self.fail(None, _join(path, name), "Member must not be null")
        for name, member in shape.members.items():
            if value.get(name) is not None:
                self.check(member, value[name], _join(path, name))

    def _list(self, shape: Shape, value: Any, path: str) -> None:
        assert isinstance(shape, ListShape)
        if not isinstance(value, list):
            self.type_errors.append(f"{path}: expected a list, got {value!r}")
            return
        self._length(shape, value, path)
        for i, item in enumerate(value, start=1):
            self.check(shape.member, item, f"{path}.{i}.member")

    def _map(self, shape: Shape, value: Any, path: str) -> None:
        assert isinstance(shape, MapShape)
        if not isinstance(value, Mapping):
            self.type_errors.append(f"{path}: expected an object, got {value!r}")
            return
        self._length(shape, value, path)
        for k, v in value.items():
            self.check(shape.key, k, f"{path}.key")
            self.check(shape.value, v, f"{path}.{k}")

    def _string(self, shape: Shape, value: Any, path: str) -> None:
        assert isinstance(shape, StringShape)
        if not isinstance(value, str):
            self.type_errors.append(f"{path}: expected a string, got {value!r}")
            return
        self._length(shape, value, path)
        if shape.enum and value not in shape.enum:
            self.fail(value, path, f"Member must satisfy enum value set: [{', '.join(shape.enum)}]")
        pattern = shape.metadata.get("pattern")
        if pattern and not _pattern(pattern).fullmatch(value):
            self.fail(value, path, f"Member must satisfy regular expression pattern: {pattern}")

    def _length(self, shape: Shape, value: Any, path: str) -> None:
        lo, hi = shape.metadata.get("min"), shape.metadata.get("max")
        if lo is not None and len(value) < lo:
            self.fail(value, path, f"Member must have length greater than or equal to {lo}")
        if hi is not None and len(value) > hi:
            self.fail(value, path, f"Member must have length less than or equal to {hi}")

    def _range(self, shape: Shape, value: float, path: str) -> None:
        lo, hi = shape.metadata.get("min"), shape.metadata.get("max")
        if lo is not None and value < lo:
            self.fail(value, path, f"Member must have value greater than or equal to {lo}")
        if hi is not None and value > hi:
            self.fail(value, path, f"Member must have value less than or equal to {hi}")


def _join(path: str, name: str) -> str:
    return f"{path}.{_camel(name)}" if path else _camel(name)


def validate_request(operation: str, params: Mapping[str, Any]) -> None:
    """Raise the error AWS would return for `params` of `operation`, or return if the shape is valid."""
    shape = sagemaker_model().operation_model(operation).input_shape
    checker = _Checker()
    if shape is not None:
        checker.check(shape, params, "")
    if checker.type_errors:
        raise SerializationException(f"Cannot deserialize the request: {checker.type_errors[0]}")
    if checker.errors:
        n = len(checker.errors)
        raise ValidationError(f"{n} validation error{'s' if n > 1 else ''} detected: " + "; ".join(checker.errors))
