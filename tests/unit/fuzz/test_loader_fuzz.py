"""Every file the product reads goes through rebalancer.parsing.loading: a bad file is exit 2 and one line naming the
file, the field (or line and column) and the value cut short; never a traceback, never a hang. The named cases are the
ones issue 15 found (tracebacks, silent duplicates, a hanging alias bomb, a value echoed in full); the properties
throw arbitrary bytes, JSON and YAML at the CLI's loaders."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner, Result
from hypothesis import given
from hypothesis import strategies as st
from support.fuzz import JSON, YAML_TEXT, fuzz, mutated, within_memory

from rebalancer.domain.policy import Policy
from rebalancer.errors import InvalidInput
from rebalancer.parsing import loading
from rebalancer_tools.cli import cli
from rebalancer_tools.simulator.node_events import load_node_events
from rebalancer_tools.simulator.teams import load_teams
from rebalancer_tools.simulator.trace import load_trace

ROOT = Path(__file__).resolve().parents[3]
SNAPSHOT_DOC: dict[str, Any] = json.loads((ROOT / "examples/snapshot.json").read_text())
POLICY_DOC: dict[str, Any] = yaml.safe_load((ROOT / "examples/policy.yaml").read_text())
LINE_MAX = 700


def plan(tmp: Path, *, snapshot: bytes | None = None, policy: bytes | None = None,
         snapshot_name: str = "snap.json", policy_name: str = "policy.yaml") -> Result:
    s = tmp / snapshot_name
    p = tmp / policy_name
    s.write_bytes(snapshot if snapshot is not None else json.dumps(SNAPSHOT_DOC).encode())
    p.write_bytes(policy if policy is not None else json.dumps(POLICY_DOC).encode())
    return CliRunner().invoke(cli, ["plan", "--snapshot", str(s), "--policy", str(p), "--format", "json"])


def assert_clean(result: Result) -> None:
    """Exit 0, or exit 2 with one short line naming the file; never an exception escaping the command."""
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exc_info
    assert result.exit_code in (0, 2), (result.exit_code, result.stderr)
    if result.exit_code == 2:
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1, result.stderr
        assert lines[0].startswith("error: "), result.stderr
        assert len(lines[0]) <= LINE_MAX


# --- the cases the issue found -----------------------------------------------------------------------------------
BOMB = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{c}: &{c} [{', '.join([f'*{p}'] * 9)}]\n" for p, c in zip("abcdefgh", "bcdefghi", strict=True))
SNAP = json.dumps(SNAPSHOT_DOC)
CASES: list[tuple[str, str, bytes, str]] = [
    ("malformed JSON", "snapshot", b'{"taken_at": ', "line 1, column 14"),
    ("not UTF-8", "snapshot", b'{"taken_at": "\xff\xfe"}', "not UTF-8 text"),
    ("not UTF-8 policy", "policy", b"teams:\n  a\xe9: {weight: 1}\n", "line 2, column 4"),
    ("deep JSON", "snapshot", b"[" * 100_000, "nested more than 64"),
    ("deep YAML", "policy", b"a: " + b"[" * 5_000, "nested more than 64"),
    ("NaN", "snapshot", SNAP.replace('"CurrentCount": 4', '"CurrentCount": NaN').encode(), "NaN"),
    ("huge number", "snapshot", SNAP.replace('"CurrentCount": 4', '"CurrentCount": 1e999').encode(), "finite"),
    ("huge integer", "policy", b"teams:\n  a: {weight: 1, guarantee: {ml.p5.48xlarge: 1" + b"0" * 400 + b"}}\n",
     "out of range"),
    ("infinite YAML", "policy", b"teams:\n  a: {weight: .inf}\n", "finite"),
    ("infinite string", "policy", b'teams:\n  a: {weight: 1, guarantee: {ml.p5.48xlarge: "inf"}}\n', "guarantee"),
    ("duplicate JSON key", "snapshot", SNAP.replace('"taken_at"', '"taken_at": "x", "taken_at"', 1).encode(),
     "duplicate key 'taken_at'"),
    ("duplicate YAML key", "policy", b"teams:\n  a: {weight: 1}\n  a: {weight: 2}\n",
     "line 3, column 3: duplicate key 'a'"),
    ("alias bomb", "policy", BOMB.encode(), "aliases (*a) are not accepted"),
    ("a time without a zone", "snapshot", SNAP.replace("2026-11-30T12:00:00Z", "2026-11-30T12:00:00").encode(),
     "taken_at: Input should have timezone info"),
    ("huge value echoed", "policy", b"teams:\n  a: {weight: " + b"x" * 200_000 + b"}\n", "teams.a.weight"),
    ("huge key", "policy", b"teams:\n  " + b"x" * 200_000 + b": {weight: 1}\n", "line 2, column 200003"),
    ("huge policy", "policy", b"# " + b"x" * (loading.POLICY_MAX_BYTES + 1), "larger than the limit"),
    ("a tag", "policy", b"teams: !!python/object:os.system {}\n", "line 1, column 8"),
]


@pytest.mark.parametrize(("what", "file", "content", "words"), CASES, ids=[c[0] for c in CASES])
def test_a_bad_file_is_one_line_naming_it(tmp_path: Path, what: str, file: str, content: bytes, words: str) -> None:
    result = plan(tmp_path, **{file: content})  # type: ignore[arg-type]
    assert_clean(result)
    assert result.exit_code == 2
    name = "snap.json" if file == "snapshot" else "policy.yaml"
    assert name in result.stderr, result.stderr
    assert words in result.stderr, result.stderr


def test_the_example_files_still_load_and_plan(tmp_path: Path) -> None:
    result = plan(tmp_path, policy=(ROOT / "examples/policy.yaml").read_bytes())
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["changes"]


def test_a_policy_from_ssm_goes_through_the_same_loader() -> None:
    with pytest.raises(InvalidInput, match="ssm:/p: line 3, column 3: duplicate key 'a'"):
        loading.load_text(Policy, "teams:\n  a: {weight: 1}\n  a: {weight: 2}\n", "ssm:/p")


@pytest.mark.parametrize(("content", "words"), [
    (b'{"a": 1, "a": 2}', "duplicate key 'a'"),
    (b'{"a": "1"}', "a: a version is a whole number"),
    (b"[1]", "expected"),
    (b"\xff", "not UTF-8"),
])
def test_known_versions_go_through_the_loader(tmp_path: Path, content: bytes, words: str) -> None:
    known = tmp_path / "known.json"
    known.write_bytes(content)
    (tmp_path / "s.json").write_text(SNAP)
    (tmp_path / "p.json").write_text(json.dumps(POLICY_DOC))
    result = CliRunner().invoke(cli, ["diff", "--snapshot", str(tmp_path / "s.json"), "--policy",
                                      str(tmp_path / "p.json"), "--known-versions", str(known)])
    assert_clean(result)
    assert result.exit_code == 2
    assert words in result.stderr, result.stderr


# --- properties --------------------------------------------------------------------------------------------------
@fuzz(max_examples=80)
@given(content=st.binary(max_size=300))
@within_memory()
def test_arbitrary_bytes_as_snapshot_or_policy(tmp_path: Path, content: bytes) -> None:
    assert_clean(plan(tmp_path, snapshot=content))
    assert_clean(plan(tmp_path, policy=content))


@fuzz(max_examples=80)
@given(text=YAML_TEXT)
@within_memory()
def test_arbitrary_yaml_as_policy(tmp_path: Path, text: str) -> None:
    assert_clean(plan(tmp_path, policy=text.encode()))


@fuzz(max_examples=60)
@given(doc=JSON)
@within_memory()
def test_arbitrary_json_as_snapshot_or_policy(tmp_path: Path, doc: Any) -> None:
    content = json.dumps(doc).encode()
    assert_clean(plan(tmp_path, snapshot=content))
    assert_clean(plan(tmp_path, policy=content))


@fuzz(max_examples=150)
@given(doc=mutated(SNAPSHOT_DOC))
@within_memory()
def test_a_snapshot_with_one_value_replaced(tmp_path: Path, doc: Any) -> None:
    assert_clean(plan(tmp_path, snapshot=json.dumps(doc).encode()))


@fuzz(max_examples=150)
@given(doc=mutated(POLICY_DOC))
@within_memory()
def test_a_policy_with_one_value_replaced(tmp_path: Path, doc: Any) -> None:
    assert_clean(plan(tmp_path, policy=json.dumps(doc).encode()))


def _first_refused(data: Any) -> tuple[str, str | None] | None:
    """What check_values refuses first, by the plain walk it was (every value a path string, parents first, a
    container's last entry first): (message, field), or None."""
    stack: list[tuple[str, Any, int]] = [("", data, 1)]
    while stack:
        path, value, depth = stack.pop()
        if depth > loading.MAX_DEPTH:
            return "nested", path[:120] or None
        if isinstance(value, float) and not math.isfinite(value):
            return "finite", path[:120] or None
        if isinstance(value, int | float) and not isinstance(value, bool) and abs(value) > loading.MAX_NUMBER:
            return "out of range", path[:120] or None
        if isinstance(value, dict):
            stack.extend((f"{path}.{k}" if path else str(k), v, depth + 1) for k, v in value.items())
        elif isinstance(value, list):
            stack.extend((f"{path}.{i}" if path else str(i), v, depth + 1) for i, v in enumerate(value))
    return None


def _nested(levels: int, inner: Any) -> Any:
    for level in range(levels):
        inner = [inner, "x"] if level % 2 else {"k": inner, "s": None}
    return inner


# Documents near the depth limit too (64 levels): a value at the limit, text among them, is refused for its depth.
NEAR_THE_LIMIT = st.builds(_nested, st.integers(60, 66), JSON)


@fuzz(max_examples=100)
@given(doc=JSON | NEAR_THE_LIMIT | st.lists(JSON | NEAR_THE_LIMIT, max_size=3))
def test_check_values_refuses_what_a_plain_walk_finds_first(doc: Any) -> None:
    """check_values skips what cannot be refused (text, nulls, numbers in range) without a call each; the value it
    says is still the first a plain walk of every value refuses, named by the same path."""
    expected = _first_refused(doc)
    got = _error_and_field(lambda: loading.check_values(doc, "doc"))
    if expected is None:
        assert got is None
    else:
        assert got is not None, expected
        assert expected[0] in got[0], (got, expected)
        assert got[1] == expected[1], (got, expected)


def _error_and_field(load: Any) -> tuple[str, str | None] | None:
    try:
        load()
    except InvalidInput as e:
        return str(e), e.field
    return None


def _error_of(load: Any) -> str | None:
    """None when `load` succeeds, the InvalidInput's text when it refuses; anything else escapes the test."""
    try:
        load()
    except InvalidInput as e:
        return str(e)
    return None


def _csv_loaders(path: Path) -> list[Any]:
    return [lambda: load_trace(path), lambda: load_teams(path), lambda: load_node_events(path, 4)]


@fuzz(max_examples=80)
@given(content=st.binary(max_size=200) | st.text(alphabet=st.sampled_from(list('ab,01.-e"\n\r\x00 ')), max_size=80)
       .map(lambda t: t.encode()))
@within_memory()
def test_arbitrary_bytes_into_the_csv_loaders(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "in.csv"
    for header in (b"", b"job_id,team,submit_s,duration_s,gpus\n", b"team,weight,guarantee\n", b"time_s,node,event\n"):
        path.write_bytes(header + content)
        for load in _csv_loaders(path):
            error = _error_of(load)
            if error is not None:
                assert str(path) in error
                assert len(error) <= LINE_MAX
                assert "\n" not in error
