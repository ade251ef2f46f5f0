"""Per team, over time: received ÷ entitled per week (`fairness_windows`) and the teams a strategy leaves worse off
than the baseline, with the policy change that keeps each whole, checked by running again."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from support.props import properties
from support.sim_results import strategy_result as _result
from support.sim_results import team_result as _team

from rebalancer_tools.simulator import worse_off
from rebalancer_tools.simulator.engine import SimConfig, Simulation
from rebalancer_tools.simulator.kueue import QueueSpec
from rebalancer_tools.simulator.metrics import WEEK_S, StrategyResult, summarize, weekly
from rebalancer_tools.simulator.run import Scenario
from rebalancer_tools.simulator.teams import TeamSpec
from rebalancer_tools.simulator.trace import TraceJob

DAY = 86400.0


def _two_weeks(jobs: list[TraceJob]) -> StrategyResult:
    queues = [QueueSpec("a", 8, borrow_limit_percent=0), QueueSpec("b", 8, borrow_limit_percent=0)]
    cfg = SimConfig(nodes=2, gpus_per_node=8)
    return summarize("static", Simulation(jobs, ["a", "b"], queues, [0, 1], cfg).run())


def test_a_team_served_in_week_one_and_not_in_week_two_has_a_worst_week_of_zero() -> None:
    # In week two b asks for 16 GPUs, more than its quota of 8: entitled to 8 beside a's 8, it never starts (no
    # borrowing) while a runs on into week three
    jobs = [TraceJob("a1", "a", 0, 16 * DAY, 8), TraceJob("b1", "b", 0, 3 * DAY, 8),
            TraceJob("b2", "b", WEEK_S + DAY, DAY, 16)]
    r = _two_weeks(jobs)
    assert r.teams["a"].worst_week_ratio == 1.0
    assert r.teams["b"].worst_week_ratio == 0.0
    assert r.fairness is not None
    assert (r.fairness.worst_ratio, r.fairness.windows) == (0.0, 6)  # 3 weeks each: b2 waits until the end


def test_weeks_without_a_share_do_not_count() -> None:
    r = _two_weeks([TraceJob("a1", "a", 0, DAY, 8)])
    assert r.teams["b"].worst_week_ratio is None
    assert r.fairness is not None
    assert (r.fairness.windows, r.fairness.worst_ratio) == (1, 1.0)


@given(st.lists(st.tuples(st.sampled_from("ab"), st.floats(0, 3 * WEEK_S), st.floats(60, 4 * DAY),
                          st.sampled_from([1, 4, 8, 16])), min_size=1, max_size=12))
@properties(40)
def test_the_weeks_add_up_to_the_run(specs: list[tuple[str, float, float, int]]) -> None:
    jobs = [TraceJob(f"j{i}", team, submit, dur, gpus) for i, (team, submit, dur, gpus) in enumerate(specs)]
    queues = [QueueSpec("a", 8, borrow_limit_percent=50), QueueSpec("b", 8, borrow_limit_percent=50)]
    raw = Simulation(jobs, ["a", "b"], queues, [0, 1], SimConfig(nodes=2, gpus_per_node=8, fair_share=True)).run()
    for i, rows in enumerate(weekly(raw)):
        assert len(rows) == len(raw.week_marks) + 1 >= int(raw.end_s // WEEK_S) + 1
        assert abs(sum(r for r, _ in rows) * 3600 - raw.received_gpu_s[i]) <= 1e-6 * max(1.0, raw.received_gpu_s[i])
        assert abs(sum(e for _, e in rows) * 3600 - raw.entitled_gpu_s[i]) <= 1e-6 * max(1.0, raw.entitled_gpu_s[i])
        assert all(r >= -1e-9 and e >= -1e-9 for r, e in rows)


def test_worse_off_needs_more_than_ten_percent_plus_ten_minutes_and_twenty_jobs() -> None:
    base = _result("static", {"a": _team(50, 10), "b": _team(50, 10), "c": _team(5, 1), "d": _team(50, 0)})
    # a: 11.2 h is 1.1 × 10 h + 12 min; b: 11.1 h is within the slack; c: too few jobs; d: 0 → 11 min > 10 min
    mine = _result("rebalancer", {"a": _team(50, 11.2), "b": _team(50, 11.1), "c": _team(5, 9), "d": _team(50, 0.19)})
    assert worse_off.losers(mine, base) == ["a", "d"]


def test_the_search_recommends_the_first_change_that_keeps_the_team_whole_at_no_ones_cost() -> None:
    """The runner stands in for the simulation: the weight × 1.5 helps a but makes b worse off; × 2 costs nobody."""
    jobs = [TraceJob("j", "a", 0, 60, 1)]
    sc = Scenario(jobs=jobs, teams=[TeamSpec("a", 1, 8), TeamSpec("b", 1, 8)], nodes=2)
    base = _result("static", {"a": _team(50, 1), "b": _team(50, 1)})
    before = _result("rebalancer", {"a": _team(50, 5), "b": _team(50, 1)})
    seen: list[float] = []
    named: list[str] = []

    def run(s: Scenario, what: str) -> StrategyResult:
        assert s.policy is not None
        w = s.policy.teams["a"].weight
        seen.append(w)
        named.append(what)
        return _result("rebalancer", {"a": _team(50, 1), "b": _team(50, 5 if w == 1.5 else 1)})

    [loser] = worse_off.search(sc, before, base, run=run)
    assert seen == [1.5, 2.0]  # stops at the first that costs nobody
    assert named == ["a: weight 1 → 1.5", "a: weight 1 → 2"]  # what a progress bar names
    assert loser.remedy is not None
    assert loser.remedy.change == "weight 1 → 2"
    assert loser.tried[0].cost == ("b",)
    assert "weight 1 → 2 keeps it whole" in loser.verdict()
