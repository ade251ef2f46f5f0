"""How long workloads run, drawn from what was seen to finish only: a running workload's remaining time from the
team's runs that lasted longer than it has run, Lindy's rule past them, one of the team's runs for a waiting one,
the cluster's runs for a team with too few."""

from __future__ import annotations

import random
from collections.abc import Sequence

import pytest
from hypothesis import given
from hypothesis import strategies as st
from support.props import properties

from rebalancer.forecast.durations import KEPT, MIN_SAMPLES, Drawn, History
from rebalancer.forecast.model import Running, Waiting

H = 3600.0
RUNS = History({"a": tuple(h * H for h in (1, 2, 3, 4, 5, 6, 10, 20)), "b": (7 * H,)})


class Fixed(random.Random):
    """A generator whose draws a test sets: `pick` the index `choice` takes, `u` what `random` returns."""

    def __init__(self, pick: int = 0, u: float = 0.5) -> None:
        super().__init__(0)
        self.pick, self.u = pick, u

    def choice(self, seq: Sequence[float]) -> float:  # type: ignore[override]
        return seq[self.pick]

    def random(self) -> float:
        return self.u


def running(team: str, started: float) -> Running:
    return Running("w", team, 8, started)


def test_a_running_workload_has_what_one_of_the_longer_runs_had_left() -> None:
    # ran 2.5 h: the runs longer than that are 3, 4, 5, 6, 10, 20 h, so 0.5 … 17.5 h left
    assert Drawn(RUNS, Fixed(0)).remaining(running("a", 0.0), 2.5 * H) == pytest.approx(0.5 * H)
    assert Drawn(RUNS, Fixed(-1)).remaining(running("a", 0.0), 2.5 * H) == pytest.approx(17.5 * H)
    seen = {Drawn(RUNS, random.Random(i)).remaining(running("a", 0.0), 2.5 * H) for i in range(200)}
    assert seen == {h * H for h in (0.5, 1.5, 2.5, 3.5, 7.5, 17.5)}


def test_past_what_the_history_holds_lindys_rule_gives_as_long_again_at_the_median() -> None:
    # ran 8 h: only 10 h and 20 h were longer, fewer than MIN_SAMPLES: e · u / (1 − u)
    assert Drawn(RUNS, Fixed(u=0.5)).remaining(running("a", 0.0), 8 * H) == pytest.approx(8 * H)
    assert Drawn(RUNS, Fixed(u=0.25)).remaining(running("a", 0.0), 8 * H) == pytest.approx(8 * H / 3)
    draws = sorted(Drawn(RUNS, random.Random(i)).remaining(running("a", 0.0), 8 * H) for i in range(2001))
    assert draws[1000] == pytest.approx(8 * H, rel=0.1)  # as likely to run another 8 h as not


def test_a_waiting_workload_runs_one_of_the_teams_runs() -> None:
    assert Drawn(RUNS, Fixed(0)).duration(Waiting("w", "a", 8, 0.0)) == 1 * H
    assert Drawn(RUNS, Fixed(-1)).duration(Waiting("w", "a", 8, 0.0)) == 20 * H


def test_a_team_with_too_few_runs_draws_from_the_clusters_and_nothing_at_all_is_no_duration() -> None:
    assert len(RUNS.by_team["b"]) < MIN_SAMPLES
    assert Drawn(RUNS, Fixed(-1)).duration(Waiting("w", "b", 8, 0.0)) == 20 * H  # the cluster's longest
    assert Drawn(History(), Fixed()).duration(Waiting("w", "b", 8, 0.0)) == float("inf")
    assert Drawn(History(), Fixed(u=0.5)).remaining(running("b", 0.0), 3 * H) == pytest.approx(3 * H)


def test_the_same_seed_draws_the_same() -> None:
    def draws(seed: str) -> list[float]:
        d = Drawn(RUNS, random.Random(seed))
        return [d.remaining(running("a", 0.0), 2.5 * H), d.duration(Waiting("w", "a", 8, 0.0))]

    assert draws("t:1") == draws("t:1")


def test_the_history_keeps_each_teams_newest_runs() -> None:
    h = History().with_finished({"a": [float(i) for i in range(KEPT + 5)]}).with_finished({"a": [999.0], "b": []})
    assert len(h.by_team["a"]) == KEPT
    assert (h.by_team["a"][0], h.by_team["a"][-1]) == (6.0, 999.0)
    assert "b" not in h.by_team
    assert h
    assert not History()


@properties(80)
@given(st.lists(st.floats(1, 1e6), min_size=1, max_size=60), st.floats(0, 2e6), st.integers(0, 2**32))
def test_a_remaining_time_is_never_negative(runs: list[float], ran: float, seed: int) -> None:
    assert Drawn(History({"a": tuple(runs)}), random.Random(seed)).remaining(running("a", 0.0), ran) >= 0


def test_a_workload_that_declares_its_run_time_runs_that_long_not_a_draw() -> None:
    # the draws would give 1 h or 20 h; it declared 7 h
    for rng in (Fixed(0), Fixed(-1)):
        assert Drawn(RUNS, rng).duration(Waiting("w", "a", 8, 0.0, declared=7 * H)) == 7 * H
        assert Drawn(RUNS, rng).remaining(Running("w", "a", 8, 0.0, declared=7 * H), 2.5 * H) == 4.5 * H
    # with nothing seen to finish anywhere, a declaration is still a duration
    assert Drawn(History(), Fixed()).duration(Waiting("w", "b", 8, 0.0, declared=3 * H)) == 3 * H


def test_a_workload_running_past_what_it_declared_is_drawn_as_if_it_had_declared_nothing() -> None:
    late = Running("w", "a", 8, 0.0, declared=2 * H)
    assert Drawn(RUNS, Fixed(0)).remaining(late, 2.5 * H) == Drawn(RUNS, Fixed(0)).remaining(running("a", 0.0), 2.5 * H)
    assert Drawn(RUNS, Fixed(0)).remaining(late, 2.5 * H) == pytest.approx(0.5 * H)


def test_nothing_runs_past_its_limit() -> None:
    # Kueue stops a workload at spec.maximumExecutionTimeSeconds: a 20 h draw, or a 30 h declaration, ends at 5 h
    assert Drawn(RUNS, Fixed(-1)).duration(Waiting("w", "a", 8, 0.0, limit=5 * H)) == 5 * H
    assert Drawn(RUNS, Fixed(0)).duration(Waiting("w", "a", 8, 0.0, declared=30 * H, limit=5 * H)) == 5 * H
    assert Drawn(RUNS, Fixed(-1)).remaining(Running("w", "a", 8, 0.0, limit=5 * H), 2.5 * H) == 2.5 * H
    assert Drawn(RUNS, Fixed(-1)).remaining(Running("w", "a", 8, 0.0, limit=5 * H), 6 * H) == 0.0
    assert Drawn(RUNS, Fixed(0)).duration(Waiting("w", "a", 8, 0.0, limit=5 * H)) == 1 * H  # a shorter draw stands


@properties(80)
@given(st.lists(st.floats(1, 1e6), min_size=1, max_size=60), st.floats(0, 2e6), st.integers(0, 2**32),
       st.none() | st.floats(1, 2e6), st.none() | st.floats(1, 2e6))
def test_a_drawn_time_never_passes_the_limit_and_a_declared_one_stands_within_it(
        runs: list[float], ran: float, seed: int, declared: float | None, limit: float | None) -> None:
    drawn = Drawn(History({"a": tuple(runs)}), random.Random(seed))
    left = drawn.remaining(Running("w", "a", 8, 0.0, declared=declared, limit=limit), ran)
    run = drawn.duration(Waiting("w", "a", 8, 0.0, declared=declared, limit=limit))
    assert left >= 0
    assert run >= 0
    if limit is not None:
        assert left <= max(0.0, limit - ran)
        assert run <= limit
    cap = float("inf") if limit is None else limit
    if declared is not None:
        assert run == min(declared, cap)
        if declared > ran:
            assert left == pytest.approx(min(declared - ran, max(0.0, cap - ran)))


def test_a_declaration_is_read_as_the_teams_declarations_have_turned_out() -> None:
    # a's runs have run half what they declared (the median of its ratios): a declared 8 h is read as 4 h
    halves = History(RUNS.by_team, {"a": (0.4, 0.5, 0.5, 0.6, 2.0), "b": (0.1,) * (MIN_SAMPLES - 1)})
    assert Drawn(halves, Fixed()).duration(Waiting("w", "a", 8, 0.0, declared=8 * H)) == 4 * H
    assert Drawn(halves, Fixed()).remaining(Running("w", "a", 8, 0.0, declared=8 * H), 1 * H) == 3 * H
    # past what it is read as (4 h), it is drawn as if it had declared nothing
    past = Running("w", "a", 8, 0.0, declared=8 * H)
    assert Drawn(halves, Fixed(0)).remaining(past, 5 * H) == Drawn(RUNS, Fixed(0)).remaining(running("a", 0.0), 5 * H)
    # too few ratios to go by: as declared
    assert Drawn(halves, Fixed()).duration(Waiting("w", "b", 8, 0.0, declared=8 * H)) == 8 * H
