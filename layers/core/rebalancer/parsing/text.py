"""Free text from people and from outside systems (approver names, login claims, Slack usernames, comments, event
reasons), made safe where it enters and again where it is printed.

`clean_text` is for recording: any value that is not a string becomes "" (a claim may be a list or a number), the
characters that can forge lines or reorder what a terminal or a log viewer shows are dropped (controls and ANSI
escapes, bidi overrides and isolates, zero-width and other format characters, line and paragraph separators,
surrogates, private-use and unassigned code points), runs of white space become one space, and the result is cut to
`limit` characters. `printable` is for showing text already recorded (by an older version, or by another writer):
the same characters are shown as escapes (`\\x1b`, `\\u202e`) instead of being acted on. `Lines` keeps a list of
lines that grows with its input (warnings, reasons) within a size: each line once, cut, the rest counted.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

VALUE_SHOWN = 60  # characters of an offending value an error message shows
UNSAFE_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})
BREAKS = frozenset("\t\n\r\v\f\x85\u2028\u2029")  # white space that ends a line: kept as one space
_SPACES = re.compile(r"\s+")


def _unsafe(ch: str) -> bool:
    return unicodedata.category(ch) in UNSAFE_CATEGORIES


def clean_text(value: Any, limit: int) -> str:
    """`value` as one line of at most `limit` safe characters ("" for a value that is not a string)."""
    if not isinstance(value, str):
        return ""
    text = value[:limit * 4]  # enough to fill `limit` after dropping, without scanning megabytes
    if text.isascii() and text.isprintable():  # most text: nothing to drop or normalize, no category to look up
        return _SPACES.sub(" ", text).strip()[:limit].rstrip()
    text = "".join(" " if ch in BREAKS else ch for ch in text if ch in BREAKS or not _unsafe(ch))
    return _SPACES.sub(" ", unicodedata.normalize("NFC", text)).strip()[:limit].rstrip()


def cut_utf8(text: str, max_bytes: int) -> str:
    """`text` whole when its UTF-8 encoding fits in `max_bytes`, else its longest prefix that fits with "…".
    Reads at most `max_bytes` characters of it (a character is at least a byte), whatever its length."""
    data = text[:max_bytes + 1].encode("utf-8", "replace")
    if len(data) <= max_bytes:
        return text
    return data[:max_bytes - len("…".encode())].decode("utf-8", "ignore") + "…"


@dataclass(slots=True)
class Lines:
    """Lines added one at a time, held to a size whatever comes: each distinct line kept once (in the order first
    seen) and cut to `line_bytes` of UTF-8; at most `limit` lines come out, the last one counting the lines left
    out when there are more (`rest`, formatted with `n`). Memory is bounded by `limit` × `line_bytes`."""

    limit: int
    line_bytes: int
    _kept: dict[str, None] = field(default_factory=dict, init=False)
    more: int = field(default=0, init=False)  # lines added beyond the kept ones (repeats among them included)

    def __post_init__(self) -> None:
        if self.limit < 1:
            raise ValueError(f"limit must be at least 1, got {self.limit}")

    def add(self, line: str) -> None:
        line = cut_utf8(line, self.line_bytes)
        if line in self._kept:
            return
        if len(self._kept) < self.limit:
            self._kept[line] = None
        else:
            self.more += 1

    def extend(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.add(line)

    def lines(self, rest: str) -> list[str]:
        kept = list(self._kept)
        if not self.more:
            return kept
        return [*kept[:self.limit - 1], rest.format(n=self.more + 1)]


def bounded_lines(lines: Iterable[str], *, limit: int, line_bytes: int, rest: str) -> list[str]:
    """`lines` through `Lines`: distinct, each cut to `line_bytes`, at most `limit`, the last counting the rest."""
    kept = Lines(limit, line_bytes)
    kept.extend(lines)
    return kept.lines(rest)


def printable(value: Any) -> str:
    """str(value) with every unsafe character shown as its escape; line breaks too."""
    text = value if isinstance(value, str) else str(value)
    return "".join(ch.encode("unicode_escape").decode("ascii") if _unsafe(ch) else ch for ch in text)


def whole_number(value: Any, max_digits: int) -> int | None:
    """`value` as a whole number when it is 1 to `max_digits` ASCII digits, else None: a header or a query parameter
    is parsed within a bound (int() takes thousands of digits, signs, underscores and other scripts' digits)."""
    if not isinstance(value, str) or not 0 < len(value) <= max_digits or not (value.isascii() and value.isdigit()):
        return None
    return int(value)


def short(value: Any, limit: int = VALUE_SHOWN) -> str:
    """repr(value) cut to `limit` characters, for one-line error messages."""
    text = repr(value) if not isinstance(value, str | bytes) or len(value) <= limit * 4 else repr(value[:limit * 4])
    return text if len(text) <= limit else f"{text[:limit - 1]}…"
