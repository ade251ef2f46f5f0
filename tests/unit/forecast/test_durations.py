"""How long workloads run, from what was seen to finish only: a running workload's remaining time among the
team's runs that lasted longer than it has run, Lindy's rule past them, the team's median for a waiting one, the
cluster's runs for a team with too few."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from support.props import properties

from rebalancer.forecast.durations import KEPT, MIN_SAMPLES, FromHistory, History, quantile
from rebalancer.forecast.model import Running, Waiting

H = 3600.0
RUNS = History({"a": tuple(h * H for h in (1, 2, 3, 4, 5, 6, 10, 20)), "b": (7 * H,)})


def running(team: str, started: float) -> Running:
    return Running("w", team, 8, started)


def test_a_running_workload_has_what_the_longer_runs_had_left() -> None:
    # ran 2.5 h: the runs longer than that are 3, 4, 5, 6, 10, 20 h, so 0.5 … 17.5 h left; median (5 + 6)/2 − 2.5
    assert FromHistory(RUNS).remaining(running("a", 0.0), 2.5 * H) == pytest.approx(3.0 * H)
    assert FromHistory(RUNS, 0.25).remaining(running("a", 0.0), 2.5 * H) == pytest.approx(quantile(
        [0.5, 1.5, 2.5, 3.5, 7.5, 17.5], 0.25) * H)


def test_past_what_the_history_holds_lindys_rule_gives_as_long_again() -> None:
    # ran 8 h: only 10 h and 20 h were longer, fewer than MIN_SAMPLES: as likely to run another 8 h as not
    assert FromHistory(RUNS).remaining(running("a", 0.0), 8 * H) == pytest.approx(8 * H)
    assert FromHistory(RUNS, 0.25).remaining(running("a", 0.0), 8 * H) == pytest.approx(8 * H / 3)
    assert FromHistory(RUNS, 0.75).remaining(running("a", 0.0), 8 * H) == pytest.approx(24 * H)


def test_a_waiting_workload_runs_the_teams_median_and_its_quartiles_for_the_range() -> None:
    assert FromHistory(RUNS).duration(Waiting("w", "a", 8, 0.0)) == pytest.approx(4.5 * H)
    assert FromHistory(RUNS, 0.75).duration(Waiting("w", "a", 8, 0.0)) == pytest.approx(quantile(
        sorted(RUNS.by_team["a"]), 0.75))


def test_a_team_with_too_few_runs_borrows_the_clusters_and_nothing_at_all_is_no_duration() -> None:
    assert len(RUNS.by_team["b"]) < MIN_SAMPLES
    assert FromHistory(RUNS).duration(Waiting("w", "b", 8, 0.0)) == pytest.approx(5 * H)  # of 1-7, 10, 20 h
    assert FromHistory(History()).duration(Waiting("w", "b", 8, 0.0)) == float("inf")
    assert FromHistory(History()).remaining(running("b", 0.0), 3 * H) == pytest.approx(3 * H)


def test_the_history_keeps_each_teams_newest_runs() -> None:
    h = History().with_finished({"a": [float(i) for i in range(KEPT + 5)]}).with_finished({"a": [999.0], "b": []})
    assert len(h.by_team["a"]) == KEPT
    assert (h.by_team["a"][0], h.by_team["a"][-1]) == (6.0, 999.0)
    assert "b" not in h.by_team
    assert h
    assert not History()


@properties(80)
@given(st.lists(st.floats(1, 1e6), min_size=1, max_size=60), st.floats(0, 2e6), st.sampled_from([0.25, 0.5, 0.75]))
def test_a_remaining_time_is_never_negative_and_grows_with_the_quantile(runs: list[float], ran: float,
                                                                        q: float) -> None:
    history = History({"a": tuple(runs)})
    got = FromHistory(history, q).remaining(running("a", 0.0), ran)
    assert got >= 0
    if q < 0.75:
        assert got <= FromHistory(history, 0.75).remaining(running("a", 0.0), ran) + 1e-6
