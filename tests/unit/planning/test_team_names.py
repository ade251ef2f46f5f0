"""No permanent name by accident: a policy team without a quota whose name is close to an existing team's is refused
("did you mean research?") unless marked `new: true`; a team the plan creates needs approval (approval.new_teams).
The check runs where the existing names are known, the planner, so the controller, `plan` and `apply` agree; `diff`
and `policy push` call the same function (tests/unit/cli/test_diff_cannot_keep.py)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from support.clusters import T0, policy, snapshot

from rebalancer.domain.spelling import edit_distance, nearest
from rebalancer.errors import InvalidInput
from rebalancer.planning.planner import make_plan
from rebalancer.planning.team_names import close_to, name_problems

P5 = "ml.p5.48xlarge"
NAMES = st.text(alphabet="abcdefgh-_", max_size=12)


@pytest.mark.parametrize(("new", "existing", "near"), [
    ("reserch", ["research", "training"], "research"),  # a letter left out
    ("reseacrh", ["research"], "research"),  # two letters swapped: one edit
    ("ml-research", ["ML_Research"], "ML_Research"),  # equal up to case, - and _
    ("mlresearch", ["ml-research"], "ml-research"),
    ("infrence-team", ["inference-team"], "inference-team"),
    ("research", ["research"], None),  # the same team: it has its quota
    ("inference", ["research", "training"], None),
    ("team-0002", ["team-0001"], None),  # a series, not a typo
    ("team-b", ["team-a"], None),
    ("b", ["a"], None),  # names of a letter or two are one edit from any other
    ("cv", ["nlp", "ml"], None),
])
def test_a_name_close_to_an_existing_teams_is_a_likely_typo(new: str, existing: list[str], near: str | None) -> None:
    assert close_to(new, existing) == near


def test_the_plan_refuses_a_typo_and_says_which_team_was_meant() -> None:
    snap = snapshot({P5: 4}, quotas={"research": {P5: 16}, "training": {P5: 16}})
    teams = {"research": {}, "training": {}, "reserch": {"guarantee": {P5: 8}}}
    with pytest.raises(InvalidInput) as refused:
        make_plan(snap, policy(teams), T0)
    assert str(refused.value) == ("teams.reserch: team 'reserch' has no quota and is close to the existing team "
                                  "'research': did you mean research? A quota's team name can never be changed; if "
                                  "reserch is a new team, mark it `new: true`")
    assert refused.value.field == "teams.reserch"


def test_a_team_marked_new_is_created_and_its_creation_needs_approval() -> None:
    snap = snapshot({P5: 4}, quotas={"research": {P5: 16}, "training": {P5: 16}})
    teams = {"research": {}, "training": {}, "reserch": {"guarantee": {P5: 8}, "new": True}}
    plan = make_plan(snap, policy(teams), T0)
    assert [(r.operation, r.team) for r in plan.requests if r.operation == "CreateComputeQuota"] == [
        ("CreateComputeQuota", "reserch")]
    assert plan.requires_approval
    assert "new team reserch: the plan creates its quota, and a quota's team name can never be changed; " \
           "approval.new_teams is on" in plan.approval_reasons
    quiet = make_plan(snap, policy(teams, approval={"new_teams": False}), T0)
    assert not any("new team" in r for r in quiet.approval_reasons)


def test_a_removed_or_existing_team_is_never_checked() -> None:
    p = policy({"research": {}, "reserch": {"remove": True}})
    assert name_problems(p, ["research"]) == []
    assert name_problems(policy({"research": {}}), ["research", "reserch"]) == []


@given(NAMES, NAMES)
def test_edit_distance_is_a_distance_of_names(a: str, b: str) -> None:
    d = edit_distance(a, b)
    assert d == edit_distance(b, a)
    assert (d == 0) == (a == b)
    assert abs(len(a) - len(b)) <= d <= max(len(a), len(b))


@given(NAMES.filter(lambda s: len(s) >= 2), st.data())
def test_one_edit_is_one_apart(name: str, data: st.DataObject) -> None:
    i = data.draw(st.integers(0, len(name) - 2))
    letter = data.draw(st.sampled_from("abcdefgh-_"))
    for edited in (name[:i] + name[i + 1:], name[:i] + letter + name[i:], name[:i] + letter + name[i + 1:],
                   name[:i] + name[i + 1] + name[i] + name[i + 2:]):
        assert edit_distance(name, edited) == (0 if edited == name else 1)


def test_nearest_names_the_closest_within_the_bound() -> None:
    assert nearest("us-esat-1", ["us-east-1", "us-west-1", "eu-west-1"], within=3) == "us-east-1"
    assert nearest("xx", ["us-east-1"], within=3) is None
