"""One loader for every document the product reads (the policy from SSM or a file, snapshots, known versions, and
the tools' CSV files): bytes → text → data → model, each step with a limit and one clear InvalidInput naming the
source, the field (or line and column) and the value, cut short.

- size: at most `max_bytes` (read no further than that);
- encoding: UTF-8 (a byte-order mark is allowed); anything else names the line and column of the first bad byte;
- JSON: duplicate keys refused, NaN/Infinity refused;
- YAML: the safe loader, duplicate keys refused, aliases refused (so no anchor-expansion bomb: `&a`/`*a` is refused
  at the first `*`), custom tags refused by the safe loader;
- every document: nested at most MAX_DEPTH deep, numbers finite and within ±MAX_NUMBER, times (YAML timestamps)
  carrying a time zone. Times in JSON are strings the models read; a model's time without a zone is refused there;
- JSON lines (history files): read as a stream, one line at a time, each at most `max_line_bytes` (memory is bounded
  by the largest allowed line, whatever the file's size or its compression ratio), each line a JSON document under
  the same limits, errors naming the line.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Iterator
from datetime import date, datetime
from pathlib import Path
from typing import Any, Literal, Protocol, TypeVar

from pydantic import BaseModel

from rebalancer.errors import InvalidInput
from rebalancer.parsing.text import VALUE_SHOWN, short
from rebalancer.parsing.validation import load_model

M = TypeVar("M", bound=BaseModel)
Format = Literal["json", "yaml", "auto"]

MAX_BYTES = 64 * 1024 * 1024  # a snapshot of 1,000 teams x 15 types is ~3 MB
POLICY_MAX_BYTES = 2 * 1024 * 1024  # SSM's advanced tier holds 8 KB; a policy file 250 times that is not a policy
MAX_DEPTH = 64  # the deepest model (snapshot → quota → config → sharing → limits → resource) is 8 levels
MAX_NUMBER = 1e15  # beyond any count of accelerators, vCPUs, GiB, versions or epoch milliseconds
LINE_MAX_BYTES = 16 * 1024 * 1024  # a JSON line holding a snapshot of 1,000 teams x 15 types is ~3 MB
READ_CHUNK = 1024 * 1024
MAX_LINES = 10_000_000  # a year of samples every five minutes for ninety clusters


class LineReader(Protocol):
    """A binary stream (a file, a gzip stream)."""

    def read(self, size: int | None = -1, /) -> bytes: ...
    def readline(self, size: int | None = -1, /) -> bytes: ...


# --- bytes and text -------------------------------------------------------------------------------------------------
def read_bytes(path: str | Path, *, what: str = "file", max_bytes: int = MAX_BYTES) -> bytes:
    p = Path(path)
    try:
        with p.open("rb") as f:
            data = _read_at_most(f, max_bytes + 1)
    except OSError as e:
        raise InvalidInput(f"cannot read {what}: {e.strerror or e}", source=str(p)) from None
    if len(data) > max_bytes:
        raise InvalidInput(f"{what} is larger than the limit of {max_bytes:,} bytes", source=str(p))
    return data


def _read_at_most(f: LineReader, limit: int) -> bytes:
    """Up to `limit` bytes, read a chunk at a time: `f.read(limit)` would allocate `limit` bytes up front (512 MB for
    a trace's limit, whatever the file's size)."""
    chunks: list[bytes] = []
    total = 0
    while total < limit:
        chunk = f.read(min(READ_CHUNK, limit - total))
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
    return b"".join(chunks)


def decode(data: bytes, source: str) -> str:
    """UTF-8 text without a byte-order mark; a bad byte is named by line and column."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        head = data[:e.start]
        line = head.count(b"\n") + 1
        column = e.start - (head.rfind(b"\n") + 1) + 1
        raise InvalidInput(f"line {line}, column {column}: not UTF-8 text (byte {data[e.start]:#04x})",
                           source=source) from None
    return text.removeprefix("\ufeff")


def read_text(path: str | Path, *, what: str = "file", max_bytes: int = MAX_BYTES) -> str:
    return decode(read_bytes(path, what=what, max_bytes=max_bytes), str(path))


# --- documents ------------------------------------------------------------------------------------------------------
def _unique_pairs(source: str) -> Any:
    def hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in pairs:
            if key in out:
                raise InvalidInput(f"duplicate key {short(key)} (each key may appear once)", source=source,
                                   field=key[:VALUE_SHOWN], value=key)
            out[key] = value
        return out

    return hook


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number JSON allows")


def parse_json(text: str, source: str) -> Any:
    try:
        return json.loads(text, object_pairs_hook=_unique_pairs(source), parse_constant=_no_constant)
    except json.JSONDecodeError as e:
        raise InvalidInput(f"line {e.lineno}, column {e.colno}: not valid JSON: {e.msg}", source=source) from None
    except InvalidInput:  # a duplicate key, said by the hook (an InvalidInput is a ValueError too)
        raise
    except ValueError as e:  # a NaN/Infinity constant, or an integer of more digits than Python converts
        raise InvalidInput(f"not valid JSON: {short(str(e), 120)}", source=source) from None
    except RecursionError:
        raise InvalidInput(f"nested more than {MAX_DEPTH} levels deep", source=source) from None


# Where a value is: (its key or index, where its parent is), None at the root; the dotted path is made from it only
# for a value refused (_field), not for each of the hundreds of thousands a large snapshot holds.
Where = tuple[Any, "Where"] | None


def _field(where: Where) -> str | None:
    """The dotted path to a value (cut to 120 characters), None for the document itself."""
    keys: list[str] = []
    while where is not None:
        key, where = where
        keys.append(str(key))
    return ".".join(reversed(keys))[:120] or None


def check_values(data: Any, source: str) -> Any:
    """Depth, finite numbers in range, times with a zone; returns `data`. Every value is visited, parents before
    children and a container's last entry first; the first refused is said."""
    _check(data, 1, None, source)
    return data


def _check(value: Any, depth: int, where: Where, source: str) -> None:
    if depth > MAX_DEPTH:
        raise InvalidInput(f"nested more than {MAX_DEPTH} levels deep", source=source, field=_field(where))
    if isinstance(value, dict):
        entries: Iterable[tuple[Any, Any]] = reversed(value.items())
    elif isinstance(value, list | tuple):
        entries = ((i, value[i]) for i in range(len(value) - 1, -1, -1))
    else:
        _check_scalar(value, where, source)
        return
    deepest = depth == MAX_DEPTH  # its entries are too deep, whatever they are
    for key, child in entries:
        # Text, nulls and numbers in range (NaN is in no range), most of a document, have nothing to check: no call.
        kind = child.__class__
        if deepest or not (kind is str or child is None
                           or ((kind is float or kind is int) and -MAX_NUMBER <= child <= MAX_NUMBER)):
            _check(child, depth + 1, (key, where), source)


def _check_scalar(value: Any, where: Where, source: str) -> None:
    if isinstance(value, str | bool) or value is None:
        return
    if isinstance(value, float) and not math.isfinite(value):
        raise InvalidInput(f"must be a finite number (got {value!r})", source=source, field=_field(where), value=value)
    if isinstance(value, int | float) and abs(value) > MAX_NUMBER:
        raise InvalidInput(f"out of range: at most {MAX_NUMBER:.0e} in size (got {short(value)})",
                           source=source, field=_field(where), value=value)
    if isinstance(value, datetime) and value.tzinfo is None:
        raise InvalidInput(f"a time needs a time zone, e.g. {value.isoformat()}Z (got {value.isoformat()})",
                           source=source, field=_field(where), value=value)
    if isinstance(value, date) and not isinstance(value, datetime):
        raise InvalidInput(f"a date alone is not a time; write {value.isoformat()}T00:00:00Z (got "
                           f"{value.isoformat()})", source=source, field=_field(where), value=value)


def json_lines(stream: LineReader, source: str, *, max_line_bytes: int = LINE_MAX_BYTES,
               max_lines: int = MAX_LINES) -> Iterator[tuple[int, str]]:
    """(line number, text) of each line of a byte stream, UTF-8 decoded, reading at most `max_line_bytes` + 1 bytes
    at a time: a longer line is refused before the rest of it is read."""
    number = 0
    while True:
        raw = stream.readline(max_line_bytes + 1)
        if not raw:
            return
        number += 1
        where = f"{source} line {number}"
        if len(raw) > max_line_bytes:
            raise InvalidInput(f"longer than the limit of {max_line_bytes:,} bytes per line", source=where)
        if number > max_lines:
            raise InvalidInput(f"more than {max_lines:,} lines", source=source)
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise InvalidInput(f"column {e.start + 1}: not UTF-8 text (byte {raw[e.start]:#04x})",
                               source=where) from None
        yield number, text.removeprefix("\ufeff") if number == 1 else text


def parse_line(text: str, source: str) -> Any:
    """One JSON line into checked data: strict JSON (no NaN, no duplicate keys), then the limits of every document.
    A line that is not JSON says so with its column (a file cut mid-line ends in one)."""
    try:
        data = json.loads(text, object_pairs_hook=_unique_pairs(source), parse_constant=_no_constant)
    except json.JSONDecodeError as e:
        raise InvalidInput(f"not valid JSON ({e.msg} at column {e.colno})", source=source) from None
    except ValueError as e:
        raise InvalidInput(f"not valid JSON: {short(str(e), 120)}", source=source) from None
    except RecursionError:
        raise InvalidInput(f"nested more than {MAX_DEPTH} levels deep", source=source) from None
    return check_values(data, source)


def parse(text: str, source: str, fmt: Format = "auto") -> Any:
    """Text into checked data. `auto`: JSON when it looks like JSON (an object or array), YAML otherwise."""
    as_json = fmt == "json" or (fmt == "auto" and text.lstrip()[:1] in ("{", "["))
    if as_json:
        data = parse_json(text, source)
    else:
        # Here, not at the top: a JSON document (an AppConfig policy, a snapshot, any state) never loads the YAML
        # parser, about a tenth of a cold start's import on top of the floor.
        from rebalancer.parsing import yaml_text
        data = yaml_text.parse_yaml(text, source, max_depth=MAX_DEPTH)
    return check_values(data, source)


def _format_of(path: Path) -> Format:
    return "json" if path.suffix.lower() == ".json" else "auto"


def load_document(path: str | Path, *, what: str = "file", max_bytes: int = MAX_BYTES) -> Any:
    p = Path(path)
    return parse(read_text(p, what=what, max_bytes=max_bytes), str(p), _format_of(p))


def load_text(model: type[M], text: str | bytes, source: str, fmt: Format = "auto",
              max_bytes: int = MAX_BYTES) -> M:
    """A model from text (the policy from SSM) under the same limits as a file."""
    data = text if isinstance(text, bytes) else text.encode("utf-8", "surrogatepass")
    if len(data) > max_bytes:
        raise InvalidInput(f"larger than the limit of {max_bytes:,} bytes", source=source)
    return load_model(model, parse(decode(data, source), source, fmt), source)


def load_file(model: type[M], path: str | Path, *, max_bytes: int | None = None) -> M:
    p = Path(path)
    limit = max_bytes if max_bytes is not None else (POLICY_MAX_BYTES if model.__name__ == "Policy" else MAX_BYTES)
    return load_model(model, load_document(p, what=model.__name__.lower(), max_bytes=limit), str(p))


def parse_document(text: str, source: str) -> Any:
    """YAML (a superset of JSON) or JSON text into checked data (`parse` with the format guessed)."""
    return parse(text, source)


def load_model_file(model: type[M], path: str | Path) -> M:
    """`load_file` under the size limit of the model's kind."""
    return load_file(model, path)
