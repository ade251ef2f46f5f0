"""Turning pydantic errors and unparsable files into one clear InvalidInput naming source, field and value."""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from rebalancer.errors import InvalidInput, RecordUnreadable

M = TypeVar("M", bound=BaseModel)


def _cut(text: str, limit: int = 300) -> str:
    """A message part (a field path, a value's repr, a validator's text quoting a value) cut to one short line."""
    text = " ".join(text.split())
    return text if len(text) <= limit else f"{text[:limit - 1]}…"


def _loc(loc: tuple[int | str, ...]) -> str:
    return ".".join(str(p) for p in loc) or "(document)"


def invalid_input(exc: ValidationError, source: str) -> InvalidInput:
    """The first error in full (field and value), then a count of the rest."""
    errors = exc.errors(include_url=False)
    first = errors[0]
    field = _loc(first["loc"])
    value = first.get("input")
    msg = first["msg"].removeprefix("Value error, ")
    shows_value = isinstance(value, dict | list) or "got " in msg
    text = _cut(msg) if shows_value else f"{_cut(msg)} (got {_cut(repr(value), 80)})"
    if len(errors) > 1:
        rest = "; ".join(f"{_cut(_loc(e['loc']))}: {_cut(e['msg'].removeprefix('Value error, '))}"
                         for e in errors[1:4])
        text += f" [and {len(errors) - 1} more: {rest}]"
    return InvalidInput(text, source=source, field=_cut(field), value=value)


def load_model(model: type[M], data: Any, source: str) -> M:
    try:
        return model.model_validate(data)
    except ValidationError as e:
        raise invalid_input(e, source) from None


def stored_model(model: type[M], data: Any, what: str, then: str) -> M:
    """A document read back from the table. One that fails validation was written by an older version (or by hand):
    RecordUnreadable naming `what`, the first field at fault and `then` (what to do), never a traceback."""
    try:
        return model.model_validate(data)
    except ValidationError as e:
        first = e.errors(include_url=False)[0]
        raise RecordUnreadable(f"{what} was recorded by an older version; this version cannot read it "
                               f"({_cut(_loc(first['loc']), 120)}: {_cut(first['msg'], 120)}); {then}") from None
