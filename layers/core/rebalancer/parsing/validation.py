"""Turning pydantic errors and unparsable files into one clear InvalidInput naming source, field and value."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import UnionType
from typing import Annotated, Any, TypeVar, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError

from rebalancer.errors import InvalidInput, RecordUnreadable
from rebalancer.spelling import nearest

M = TypeVar("M", bound=BaseModel)


def _cut(text: str, limit: int = 300) -> str:
    """A message part (a field path, a value's repr, a validator's text quoting a value) cut to one short line."""
    text = " ".join(text.split())
    return text if len(text) <= limit else f"{text[:limit - 1]}…"


def _loc(loc: tuple[int | str, ...]) -> str:
    return ".".join(str(p) for p in loc) or "(document)"


def _models(annotation: Any) -> list[Any]:
    """What a value of `annotation` may be, through Optional, unions and Annotated."""
    if get_origin(annotation) is Annotated:
        return _models(get_args(annotation)[0])
    if get_origin(annotation) in (Union, UnionType):
        return [m for a in get_args(annotation) for m in _models(a)]
    return [annotation]


def _inside(annotation: Any, part: int | str) -> list[Any]:
    """The annotations of the value at `part` (a field, a mapping's key, a list's index) in a value of `annotation`."""
    out: list[Any] = []
    for tp in _models(annotation):
        args = get_args(tp)
        if isinstance(tp, type) and issubclass(tp, BaseModel):
            out += [f.annotation for name, f in tp.model_fields.items() if part in (name, f.alias)]
        elif get_origin(tp) in (dict, Mapping) and len(args) == 2:
            out.append(args[1])
        elif get_origin(tp) in (list, tuple, Sequence) and args and isinstance(part, int):
            out.append(args[0])
    return out


def allowed_keys(model: type[BaseModel], loc: tuple[int | str, ...]) -> set[str]:
    """The keys a model may take at `loc` (an extra key's place in the document): the fields of every model the
    document's path leads to there, by the names a document uses (aliases when set)."""
    annotations: list[Any] = [model]
    for part in loc:
        annotations = [a for tp in annotations for a in _inside(tp, part)]
    return {f.alias or name for tp in annotations for m in _models(tp)
            if isinstance(m, type) and issubclass(m, BaseModel) for name, f in m.model_fields.items()}


def _did_you_mean(model: type[BaseModel] | None, error: Any) -> str:
    """"; did you mean weight?" for a key the model does not take that is a typo of one it does."""
    if model is None or error["type"] != "extra_forbidden" or not error["loc"]:
        return ""
    *path, key = error["loc"]
    near = nearest(str(key), allowed_keys(model, tuple(path)), within=2) if isinstance(key, str) else None
    return f"; did you mean {near}?" if near else ""


def invalid_input(exc: ValidationError, source: str, model: type[BaseModel] | None = None) -> InvalidInput:
    """The first error in full (field and value), then a count of the rest. Given the model, a key it does not take
    that is a typo of one it does gets "did you mean …?"."""
    errors = exc.errors(include_url=False)
    first = errors[0]
    field = _loc(first["loc"])
    value = first.get("input")
    msg = first["msg"].removeprefix("Value error, ")
    shows_value = isinstance(value, dict | list) or "got " in msg
    text = _cut(msg) if shows_value else f"{_cut(msg)} (got {_cut(repr(value), 80)})"
    text += _did_you_mean(model, first)
    if len(errors) > 1:
        rest = "; ".join(f"{_cut(_loc(e['loc']))}: {_cut(e['msg'].removeprefix('Value error, '))}"
                         for e in errors[1:4])
        text += f" [and {len(errors) - 1} more: {rest}]"
    return InvalidInput(text, source=source, field=_cut(field), value=value)


def load_model(model: type[M], data: Any, source: str) -> M:
    try:
        return model.model_validate(data)
    except ValidationError as e:
        raise invalid_input(e, source, model) from None


def stored_model(model: type[M], data: Any, what: str, then: str) -> M:
    """A document read back from the table. One that fails validation was written by an older version (or by hand):
    RecordUnreadable naming `what`, the first field at fault and `then` (what to do), never a traceback."""
    try:
        return model.model_validate(data)
    except ValidationError as e:
        first = e.errors(include_url=False)[0]
        raise RecordUnreadable(f"{what} was recorded by an older version; this version cannot read it "
                               f"({_cut(_loc(first['loc']), 120)}: {_cut(first['msg'], 120)}); {then}") from None
