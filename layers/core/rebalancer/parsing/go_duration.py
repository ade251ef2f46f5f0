"""Go's duration strings (time.ParseDuration), as Kubernetes objects carry them: `300ms`, `1.5h`, `2h45m`.

Read exactly as Go reads them, since Go (and so Kueue) decides what a duration is: `[-+]?([0-9]*(\\.[0-9]*)?[a-z]+)+`
with ASCII digits only (a digit of another script is no digit to Go), a unit among ns, us, µs (U+00B5), μs (U+03BC),
ms, s, m, h, and the value counted in whole nanoseconds within an int64: past 2^63 − 1 ns (2,562,047 h 47 m
16.854775807 s) Go refuses it, and so does this. A fraction is converted as Go converts it (through a float64,
truncated). Only positive durations are taken here: a run time of 0 or less is no run time."""

from __future__ import annotations

_NS = {"ns": 1, "us": 1_000, "µs": 1_000, "μs": 1_000, "ms": 1_000_000, "s": 1_000_000_000,
       "m": 60_000_000_000, "h": 3_600_000_000_000}
_MAX = 1 << 63  # Go counts in a uint64 up to this, then asks for an int64 (≤ _MAX − 1)
TEXT_MAX = 64  # characters of a refused duration shown back in a message


def _digit(c: str) -> bool:
    return "0" <= c <= "9"  # ASCII only: str.isdigit() would take "٤" (Arabic-Indic four)


_RANGE = "not a duration within Go's range (2,562,047 h)"


def _number(s: str, at: int) -> tuple[int, int, float, int]:
    """The number at `at`: its whole part, its fraction's digits and their scale (10^digits kept), and where it
    ends. Digits of the fraction beyond a nanosecond's worth are dropped, as Go drops them."""
    n, start, whole = len(s), at, 0
    while at < n and _digit(s[at]):
        whole = whole * 10 + ord(s[at]) - 48
        if whole > _MAX:
            raise ValueError(_RANGE)
        at += 1
    before = at > start
    fraction, scale, after = 0, 1.0, False
    if at < n and s[at] == ".":
        at += 1
        begun, overflow = at, False
        while at < n and _digit(s[at]):
            if not overflow:
                if fraction > (_MAX - 1) // 10 or fraction * 10 + ord(s[at]) - 48 > _MAX:
                    overflow = True
                else:
                    fraction, scale = fraction * 10 + ord(s[at]) - 48, scale * 10
            at += 1
        after = at > begun
    if not before and not after:
        raise ValueError("not a duration")
    return whole, fraction, scale, at


def _unit(s: str, at: int) -> tuple[int, int]:
    """Nanoseconds of the unit at `at`, and where it ends."""
    begun, n = at, len(s)
    while at < n and not (s[at] == "." or _digit(s[at])):
        at += 1
    if at == begun:
        raise ValueError("not a duration: missing unit")
    unit = _NS.get(s[begun:at])
    if unit is None:
        raise ValueError(f"not a duration: unknown unit {s[begun:at][:TEXT_MAX]!r}")
    return unit, at


def go_nanoseconds(text: str) -> int:
    """Nanoseconds of a Go duration string, as time.ParseDuration gives them (negative ones included); ValueError
    naming what Go would say otherwise."""
    s, at, n = text, 0, len(text)
    negative = False
    if n and s[0] in "+-":
        negative, at = s[0] == "-", 1
    if s[at:] == "0":
        return 0
    if at == n:
        raise ValueError("not a duration")
    total = 0
    while at < n:
        if not (s[at] == "." or _digit(s[at])):
            raise ValueError("not a duration")
        whole, fraction, scale, at = _number(s, at)
        unit, at = _unit(s, at)
        if whole > _MAX // unit:
            raise ValueError(_RANGE)
        value = whole * unit
        if fraction > 0:
            value += int(float(fraction) * (float(unit) / scale))
            if value > _MAX:
                raise ValueError(_RANGE)
        total += value
        if total > _MAX:
            raise ValueError(_RANGE)
    if negative:
        return -total
    if total > _MAX - 1:
        raise ValueError(_RANGE)
    return total


def go_duration(text: str) -> float:
    """Seconds of a Go duration string (time.ParseDuration: `300ms`, `1.5h`, `2h45m`), > 0; ValueError otherwise."""
    ns = go_nanoseconds(text)
    if ns <= 0:
        raise ValueError("not a positive duration")
    return ns / 1e9
