"""Team labels of a real trace → valid HyperPod team names: always valid, injective, and a function of the set of
labels alone."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st
from support.props import properties

from rebalancer.domain.policy import TEAM_NAME, TEAM_NAME_MAX
from rebalancer.errors import InvalidInput
from rebalancer_tools.simulator.labels import fold, renamed, team_names
from rebalancer_tools.simulator.trace import parse_trace

HEADER = "job_id,team,submit_s,duration_s,gpus\n"

labels = st.lists(st.text(min_size=1, max_size=60).filter(lambda s: fold(s) or TEAM_NAME.fullmatch(s)),
                  max_size=30)
crowded = st.lists(st.sampled_from(["app_0", "App 0", "app-0", "APP-0", "app-0-2", "app 0 2", "app__0", "a" * 45,
                                    "A" * 45, "a" * 39 + "_", "Équipe ML", "equipe-ml", "x", "X"]), max_size=14)


@properties(100)
@given(st.one_of(labels, crowded), st.randoms())
def test_the_mapping_is_valid_injective_and_depends_only_on_the_set(names: list[str], rng: random.Random) -> None:
    mapping = team_names(names)
    assert set(mapping) == set(names)
    assert all(len(n) <= TEAM_NAME_MAX and TEAM_NAME.fullmatch(n) for n in mapping.values())
    assert len(set(mapping.values())) == len(mapping)  # injective
    shuffled = list(names)
    rng.shuffle(shuffled)
    assert team_names(shuffled + names[:3]) == mapping  # order and repeats do not matter
    assert all(mapping[n] == n for n in names if len(n) <= TEAM_NAME_MAX and TEAM_NAME.fullmatch(n))


def test_collisions_get_suffixes_in_the_order_of_the_labels() -> None:
    assert team_names(["app_0", "App 0", "app-0", "APP_0"]) == {
        "app-0": "app-0", "APP_0": "app-0-2", "App 0": "app-0-3", "app_0": "app-0-4"}
    assert renamed(team_names(["ml", "Vision Team"])) == {"Vision Team": "vision-team"}


def test_a_long_label_is_cut_and_its_twin_keeps_the_limit() -> None:
    mapping = team_names(["A" * 50, "a" * 50])
    assert sorted(mapping.values()) == ["a" * 38 + "-2", "a" * 40]


def test_a_label_with_nothing_to_keep_is_refused() -> None:
    with pytest.raises(ValueError, match="no letter or digit"):
        team_names(["ok", "__"])


def test_a_trace_with_any_labels_runs_under_the_mapped_names() -> None:
    trace = parse_trace([HEADER, "1,app_0,0,10,1\n", "2,App 0,5,10,1\n", "3,app-0,6,10,1\n"], "t.csv")
    assert trace.labels == {"app-0": "app-0", "App 0": "app-0-2", "app_0": "app-0-3"}
    assert [j.team for j in trace.jobs] == ["app-0-3", "app-0-2", "app-0"]


def test_an_unusable_label_names_the_line_and_column() -> None:
    with pytest.raises(InvalidInput) as e:
        parse_trace([HEADER, "1,ok,0,10,1\n", "2,日本,0,10,1\n"], "t.csv")
    assert str(e.value).startswith("t.csv:3: team: '日本' has no letter or digit")
