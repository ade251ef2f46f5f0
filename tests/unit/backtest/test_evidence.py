"""How much a backtest proves: a history under a day is too thin to mean anything, and a suggestion is recommended
only when it beats the current policy by more than the history's own hour-to-hour variation could give."""

from __future__ import annotations

import random

from hypothesis import given
from hypothesis import strategies as st
from support.props import properties
from support.replays import morning_bursts

from rebalancer.domain.policy import Policy
from rebalancer_tools.backtest import evidence
from rebalancer_tools.backtest import synthetic as syn
from rebalancer_tools.backtest.advice import advise
from rebalancer_tools.backtest.replay import Replay, prepare, replay
from rebalancer_tools.backtest.search import REVERSAL_WEIGHT, objective_value


def hourly(costs: list[float]) -> Replay:
    """A replay whose objective per hour is `costs` (all of it deficit)."""
    return Replay(name="r", hourly={h: [c, 0.0, 0.0] for h, c in enumerate(costs)})


def compare(current: list[float], candidate: list[float]) -> evidence.Gain:
    return evidence.gain(hourly(current), hourly(candidate), sum(current), sum(candidate))


def test_one_avoided_burst_in_a_day_is_one_event_not_evidence() -> None:
    """The suggestion saves one reversal's worth in one hour of 24: twice its standard error is larger."""
    got = compare([0.0] * 23 + [REVERSAL_WEIGHT], [0.0] * 24)
    assert got.gain == REVERSAL_WEIGHT
    assert not got.enough
    assert "less than the margin" in got.text()


def test_the_same_saving_every_hour_is_evidence_and_a_tie_is_not() -> None:
    assert compare([3.0] * 24, [2.0] * 24).enough  # no variation: the floor of one accelerator-hour applies
    tie = compare([4.9] * 24, [4.9] * 24)
    assert not tie.enough
    assert tie.text().startswith("no better than the current policy")


def test_a_saving_under_one_accelerator_hour_is_nothing_a_team_would_notice() -> None:
    got = compare([1.0] * 24, [0.99] * 24)
    assert 0 < got.gain < evidence.MIN_GAIN
    assert not got.enough


@properties(60)
@given(st.lists(st.floats(0, 50), min_size=2, max_size=60), st.lists(st.floats(0, 50), min_size=2, max_size=60),
       st.randoms(use_true_random=False))
def test_the_verdict_is_the_paired_test_whatever_the_hours(current: list[float], other: list[float],
                                                           rnd: random.Random) -> None:
    """For any pair of hourly objectives: the gain is the difference of the totals; the margin never falls under
    the floor nor under two standard errors; at most one of two policies is better than the other; the order of
    the hours changes nothing."""
    candidate = (other * len(current))[:len(current)]
    got = compare(current, candidate)
    assert abs(got.gain - (sum(current) - sum(candidate))) < 1e-6
    assert got.margin >= evidence.MIN_GAIN
    assert got.margin >= 2 * got.standard_error - 1e-9
    assert not (got.enough and compare(candidate, current).enough)
    order = list(range(len(current)))
    rnd.shuffle(order)
    shuffled = compare([current[i] for i in order], [candidate[i] for i in order])
    assert abs(shuffled.margin - got.margin) < 1e-6
    assert shuffled.enough == got.enough


def test_a_history_under_a_day_is_too_thin_and_says_how_much_it_has_and_needs() -> None:
    one = prepare(syn.history(morning_bursts, {"a": 24, "b": 8}, nodes=4, days=5 / 1440).states())
    assert len(one) == 1
    said = evidence.too_thin(one, "a recommendation")
    assert said is not None
    assert "covers 0.1 h in 1 state (2026-11-01 00:00 to 2026-11-01 00:00 UTC)" in said
    assert "a recommendation needs at least 24 h" in said
    day = prepare(syn.history(morning_bursts, {"a": 24, "b": 8}, nodes=4, days=1, step_minutes=30).states())
    assert evidence.too_thin(day) is None


@properties(15)
@given(seed=st.integers(0, 10_000), teams=st.integers(2, 4))
def test_the_current_policy_is_never_recommended_over_itself(seed: int, teams: int) -> None:
    """Whatever the history, a candidate that changes nothing scores the same and is not recommended."""
    names = syn.team_names(teams)
    h = syn.history(syn.random_walk(teams, seed=seed, peak=8), dict.fromkeys(names, 8), nodes=teams, days=1,
                    step_minutes=30)
    doc = {"teams": {t: {} for t in names}}
    samples = h.states()
    states = prepare(samples)
    current = replay("current", states, Policy.model_validate(doc), samples[0])
    advice = advise(doc, states, samples[0], dict.fromkeys(names, 1.0), (), current, [("itself", [])])
    assert advice.best.score == objective_value(current)
    assert not advice.recommended
    assert advice.verdict().endswith("so no policy is recommended")
