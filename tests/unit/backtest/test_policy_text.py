"""`recommend` writes its edits into the policy's own text: what the file reads as afterwards is exactly the edits
applied to the parsed policy, and its comments and key order are the original's."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml
from hypothesis import given
from hypothesis import strategies as st
from support import docs
from support.fuzz import fuzz

from rebalancer_tools.backtest.policy_text import Edit, apply_edits, patch

ROOT = Path(__file__).resolve().parents[3]
TEXTS = [p.read_text() for p in sorted((ROOT / "examples").glob("*policy*.yaml"))] + docs.policies()
PARSED = {text: yaml.safe_load(text) for text in TEXTS}  # each text parsed once, not once per example and draw
POOLS = ["ml.p5.48xlarge", "ml.g5.12xlarge", "ml.trn1.32xlarge", "ml.p5.48xlarge:mig-1g.10gb"]


def comments(text: str) -> list[str]:
    return re.findall(r"#.*", text)


@st.composite
def edits_of(draw: st.DrawFn, text: str) -> list[Edit]:
    """The edits recommend makes: guarantees set or removed (a team of the policy or a new pool), stability and
    approval settings set (present or not)."""
    teams = sorted(PARSED[text]["teams"])
    guarantee = st.tuples(st.just("teams"), st.sampled_from(teams), st.just("guarantee"), st.sampled_from(POOLS))
    setting = st.sampled_from([("stability", "cooldown_minutes"), ("stability", "min_step"),
                               ("approval", "moved_accelerators"), ("approval", "max_decrease_percent")])
    one = st.tuples(guarantee, st.none() | st.integers(1, 64)) | st.tuples(setting, st.integers(0, 100))
    return draw(st.lists(one, min_size=1, max_size=6))


@fuzz(max_examples=200)
@given(st.sampled_from(TEXTS).flatmap(lambda t: st.tuples(st.just(t), edits_of(t))))
def test_the_patched_text_reads_as_the_edits_and_keeps_comments_and_order(case: tuple[str, list[Edit]]) -> None:
    text, edits = case
    out = patch(text, edits)
    assert out is not None, (text, edits)
    before: dict[str, Any] = PARSED[text]
    after = yaml.safe_load(out)
    assert after == apply_edits(before, edits)
    if all(value is not None for _, value in edits):  # nothing removed: every comment is still there
        assert comments(out) == comments(text)
    assert [k for k in after if k in before] == list(before)
    assert [t for t in after["teams"] if t in before["teams"]] == list(before["teams"])


def test_a_guarantee_left_empty_goes_and_a_team_left_empty_stays() -> None:
    text = "teams:\n  a:  # the only team\n    guarantee:\n      ml.p5.48xlarge: 8\n  b:\n    weight: 2\n" \
           "    guarantee: {ml.p5.48xlarge: 4}\n"
    out = patch(text, [(("teams", "a", "guarantee", "ml.p5.48xlarge"), None),
                       (("teams", "b", "guarantee", "ml.p5.48xlarge"), None)])
    assert out == "teams:\n  a: {}\n  b:\n    weight: 2\n"


def test_json_stays_json() -> None:
    text = '{\n  "teams": {"a": {"weight": 1}},\n  "stability": {"min_step": 1}\n}\n'
    out = patch(text, [(("stability", "cooldown_minutes"), 60), (("teams", "a", "guarantee", "ml.p5.48xlarge"), 4)],
                json_style=True)
    assert out == ('{\n  "teams": {"a": {"weight": 1, "guarantee": {"ml.p5.48xlarge": 4}}},\n'
                   '  "stability": {"min_step": 1, "cooldown_minutes": 60}\n}\n')
