"""Strategies and settings for fuzzing the product's boundaries: arbitrary JSON values, YAML-ish text, hostile
option values, a valid document with one value replaced. Settings are derandomized (a failure reproduces) and bounded
per example by hypothesis' deadline and by `within_memory` (tracemalloc's peak), not by a wall-clock assertion."""

from __future__ import annotations

import copy
import functools
import tracemalloc
from collections.abc import Callable
from datetime import timedelta
from typing import Any, TypeVar

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from support.props import scaled

SCALARS = (st.none() | st.booleans() | st.integers(min_value=-(2**70), max_value=2**70)
           | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=30))
JSON = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=4)
                    | st.dictionaries(st.text(max_size=12), inner, max_size=4), max_leaves=20)
# Option values an attacker or a tired admin types: non-finite and huge numbers, other digits, empty, paths.
HOSTILE = ["nan", "NaN", "-nan", "inf", "-inf", "Infinity", "1e400", "-1e400", "1e-400", "5e-324", "1" + "0" * 30,
           "10**30", "0x10", "1_000", "²", "٣", "①", "", " ", "-0", "-1", "0", "1", "1.5", "9" * 19, "\x00", "\n",
           "/", "/nonexistent/dir/file", "/etc/passwd/x", ".", "..", "~", "a" * 300, "\u202e", "%s", "{}", "[]"]
OPTION_VALUES = (st.sampled_from(HOSTILE) | st.text(max_size=40)
                 | st.floats(allow_nan=True, allow_infinity=True).map(repr)
                 | st.integers(min_value=-(2**80), max_value=2**80).map(str))
# Text made of the characters YAML cares about, so that anchors, aliases, tags, flow and block syntax all show up.
YAML_TEXT = st.lists(st.sampled_from([*"ab:1-.&*!{}[],'\"#|>\n \t%@`?~0e+\u00e9", "<<", "!!", "---"]),
                     max_size=60).map("".join)


F = TypeVar("F", bound=Callable[..., Any])
MEMORY_LIMIT = 64 * 1024 * 1024  # bytes one example may allocate at its peak (traced by tracemalloc)


def within_memory(limit: int = MEMORY_LIMIT) -> Callable[[F], F]:
    """Each call (each hypothesis example, when applied below @given) fails when its traced peak allocation exceeds
    `limit`: an input that makes memory grow with a count it carries is caught here, not by the machine."""

    def decorate(test: F) -> F:
        @functools.wraps(test)
        def bounded(*args: Any, **kwargs: Any) -> Any:
            already = tracemalloc.is_tracing()
            if not already:
                tracemalloc.start()
            tracemalloc.reset_peak()
            try:
                result = test(*args, **kwargs)
                _, peak = tracemalloc.get_traced_memory()
            finally:
                if not already:
                    tracemalloc.stop()
            assert peak <= limit, f"one example allocated {peak:,} bytes at its peak (limit {limit:,})"
            return result

        return bounded  # type: ignore[return-value]

    return decorate


def fuzz(max_examples: int = 60, deadline_s: float = 5.0) -> settings:
    """Each example must finish within `deadline_s` (hypothesis fails a slower one, and says so)."""
    return settings(derandomize=True, database=None, max_examples=scaled(max_examples),
                    deadline=timedelta(seconds=deadline_s),
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.function_scoped_fixture])


def paths(doc: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path into a JSON document (dict keys, list indexes), the root included."""
    out = [prefix]
    if isinstance(doc, dict):
        for k, v in doc.items():
            out += paths(v, (*prefix, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            out += paths(v, (*prefix, i))
    return out


def replaced(doc: Any, path: tuple[Any, ...], value: Any) -> Any:
    if not path:
        return value
    out = copy.deepcopy(doc)
    node = out
    for p in path[:-1]:
        node = node[p]
    node[path[-1]] = value
    return out


@st.composite
def mutated(draw: st.DrawFn, doc: Any) -> Any:
    """`doc` with one value (anywhere, the root included) replaced by an arbitrary JSON value."""
    where = draw(st.sampled_from(paths(doc)))
    return replaced(doc, where, draw(JSON))
