"""Go's duration strings (time.ParseDuration), as Kubernetes objects carry them: `300ms`, `1.5h`, `2h45m`."""

from __future__ import annotations

import math
import re

_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_PART = re.compile(r"(\d+\.?\d*|\.\d+)(ns|us|µs|μs|ms|s|m|h)")
TEXT_MAX = 64  # characters of a duration read; a longer one is not one a person wrote


def go_duration(text: str) -> float:
    """Seconds of a Go duration string (time.ParseDuration: `300ms`, `1.5h`, `2h45m`), > 0; ValueError otherwise."""
    if len(text) > TEXT_MAX or not text:
        raise ValueError("not a duration")
    at, total = (1 if text[0] == "+" else 0), 0.0
    if at == len(text):
        raise ValueError("not a duration")
    while at < len(text):
        part = _PART.match(text, at)
        if part is None:
            raise ValueError("not a duration")
        total += float(part.group(1)) * _UNITS[part.group(2)]
        at = part.end()
    if not math.isfinite(total) or total <= 0:
        raise ValueError("not a positive duration")
    return total
