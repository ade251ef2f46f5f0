"""The history loader fuzzed (issue 25 item 8): arbitrary bytes, arbitrary JSON lines and a valid export with one
value replaced are read into a History or refused with one InvalidInput line naming the file — never another
exception, within a deadline and a memory limit per example."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from support.fuzz import JSON, fuzz, mutated, within_memory

from rebalancer.errors import InvalidInput
from rebalancer_tools.backtest import synthetic as syn
from rebalancer_tools.backtest.history import History, export_lines, load_history, parse_lines

_H = syn.history(lambda _team, _at: (8.0, 2.0), {"a": 8, "b": 8}, nodes=2, days=0.01)
VALID = [json.loads(line) for line in export_lines(_H.cluster, _H.runs, _H.samples, since=None,
                                                    exported_at=_H.samples[-1].at)]


def _refusal(read: Callable[[], History]) -> str | None:
    """The one line of an InvalidInput, or None when the history loads (and then holds something to replay)."""
    try:
        history = read()
    except InvalidInput as e:
        return str(e)
    assert history.samples or history.runs
    return None


def loads_or_refuses(lines: list[str]) -> None:
    error = _refusal(lambda: parse_lines(lines, "h.jsonl"))
    if error is not None:
        assert error.startswith("h.jsonl")
        assert "\n" not in error


@fuzz(max_examples=40)
@given(st.binary(max_size=2000))
@within_memory()
def test_arbitrary_bytes_as_a_history_file(tmp_path_factory: Any, content: bytes) -> None:
    path = Path(tmp_path_factory.mktemp("h")) / "h.jsonl"
    path.write_bytes(content)
    error = _refusal(lambda: load_history(path))
    assert error is None or (error.startswith(str(path)) and "\n" not in error)


@fuzz(max_examples=40)
@given(st.lists(JSON.map(json.dumps), max_size=5))
@within_memory()
def test_arbitrary_json_lines_after_a_header(lines: list[str]) -> None:
    loads_or_refuses([json.dumps(VALID[0]), *lines])


@fuzz(max_examples=60)
@given(st.integers(0, len(VALID) - 1).flatmap(lambda i: st.tuples(st.just(i), mutated(VALID[i]))))
@within_memory()
def test_a_valid_export_with_one_value_replaced(case: tuple[int, Any]) -> None:
    i, doc = case
    lines = [json.dumps(d) for d in VALID]
    lines[i] = json.dumps(doc)
    loads_or_refuses(lines)
