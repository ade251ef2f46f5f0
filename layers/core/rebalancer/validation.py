"""Turning pydantic errors and unparsable files into one clear InvalidInput naming source, field and value."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from rebalancer.errors import InvalidInput

M = TypeVar("M", bound=BaseModel)


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
    text = msg if shows_value else f"{msg} (got {value!r})"
    if len(errors) > 1:
        rest = "; ".join(f"{_loc(e['loc'])}: {e['msg'].removeprefix('Value error, ')}" for e in errors[1:4])
        text += f" [and {len(errors) - 1} more: {rest}]"
    return InvalidInput(text, source=source, field=field, value=value)


def parse_document(text: str, source: str) -> Any:
    """YAML (a superset of JSON) into Python data; a syntax error names the source and the line."""
    import yaml  # only the steps that read a policy need it, not every handler's config

    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        raise InvalidInput(f"{where}not valid YAML/JSON: {getattr(e, 'problem', e)}", source=source) from None


def load_model(model: type[M], data: Any, source: str) -> M:
    try:
        return model.model_validate(data)
    except ValidationError as e:
        raise invalid_input(e, source) from None


def load_model_file(model: type[M], path: str | Path) -> M:
    p = Path(path)
    try:
        text = p.read_text()
    except OSError as e:
        raise InvalidInput(f"cannot read file: {e.strerror}", source=str(p)) from None
    data = json.loads(text) if p.suffix == ".json" and text.lstrip().startswith("{") else parse_document(text, str(p))
    return load_model(model, data, str(p))
