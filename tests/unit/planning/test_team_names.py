"""No permanent name by accident: a policy team without a quota whose name is close to an existing team's is refused
("did you mean research?") unless marked `new: true`; a team the plan creates needs approval (approval.new_teams).
The check runs where the existing names are known, the planner, so the controller, `plan` and `apply` agree; `diff`
and `policy push` call the same function (tests/unit/cli/test_diff_cannot_keep.py)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.clusters import T0, policy, snapshot

from rebalancer.errors import InvalidInput
from rebalancer.planning.planner import make_plan
from rebalancer.planning.team_names import close_to, name_problems, siblings, within
from rebalancer.spelling import edit_distance, nearest, skeleton

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
    ("team-21", ["team-12"], None),  # numbers: a series
    ("team-ba", ["team-ab"], "team-ab"),  # two letters swapped: no series
    ("team-l", ["team-1"], "team-1"),  # a digit for the letter it looks like: no series
    ("team-o", ["team-0"], "team-0"),
    ("team-10", ["team-lo"], "team-lo"),
    ("m1-research", ["ml-research"], "ml-research"),
    ("c\u0430t", ["cat"], "cat"),  # a Cyrillic а: the same name to a reader, however short
    ("r\u0435serch", ["research"], "research"),  # a Cyrillic е and a letter left out
    ("\uff54eam-x", ["team-x"], "team-x"),  # a fullwidth t (NFKC)
    ("team-x", ["team-y", "taem-x"], "taem-x"),
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


def test_the_plan_refuses_a_digit_for_a_letter_and_two_letters_swapped() -> None:
    snap = snapshot({P5: 4}, quotas={"team-1": {P5: 16}, "vision-ab": {P5: 16}})
    for typo, meant in (("team-l", "team-1"), ("vision-ba", "vision-ab")):
        with pytest.raises(InvalidInput, match=f"did you mean {meant}\\?"):
            make_plan(snap, policy({"team-1": {}, "vision-ab": {}, typo: {}}), T0)
    make_plan(snap, policy({"team-1": {}, "vision-ab": {}, "team-2": {}, "vision-cd": {}}), T0)  # series


@given(st.text(alphabet="abcdefghlo01-", min_size=1, max_size=12), st.data())
def test_a_name_and_its_look_alike_or_swapped_spelling_are_close(name: str, data: st.DataObject) -> None:
    """Whatever the name: one of its look-alike spellings (a digit for the letter it looks like, a Cyrillic letter
    for a Latin one) is the same name, and one with two neighbours swapped is close when the name is long enough
    for one edit."""
    look = name.translate(str.maketrans({"o": "0", "l": "1", "a": "\u0430", "e": "\u0435", "c": "\u0441"}))
    if look != name:
        assert close_to(look, [name]) == name
    i = data.draw(st.integers(0, max(0, len(name) - 2)))
    swapped = name[:i] + name[i + 1:i + 2] + name[i:i + 1] + name[i + 2:]
    if skeleton(swapped) != skeleton(name) and len(name) > 3 and not siblings(swapped, name):
        assert close_to(swapped, [name]) == name


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


def every_pair(name: str, existing: list[str]) -> str | None:
    """The check by its definition: the new name's skeleton against every existing one, letter by letter."""
    if name in existing:
        return None
    same = sorted(e for e in existing if skeleton(e) == skeleton(name))
    if same:
        return same[0]
    near = sorted((edit_distance(skeleton(name), skeleton(e)), e) for e in existing if not siblings(name, e))
    return next((e for d, e in near if d <= within(name)), None)


@settings(max_examples=300)
@given(st.text(alphabet="abelo01-", min_size=1, max_size=14),
       st.lists(st.text(alphabet="abelo01-", min_size=1, max_size=14), max_size=30))
def test_comparing_with_the_names_that_can_be_close_finds_what_comparing_with_all_does(
        name: str, existing: list[str]) -> None:
    assert close_to(name, existing) == every_pair(name, existing)
