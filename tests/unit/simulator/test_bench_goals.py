"""The bench's goal table: each goal judged from the figures as they are, met or missed, one row per scenario."""

from __future__ import annotations

import dataclasses

from click.testing import CliRunner

from rebalancer_tools.cli import cli
from rebalancer_tools.simulator.bench import GOALS, SCENARIOS, goal_table, goals
from rebalancer_tools.simulator.eta import EtaAccuracy
from rebalancer_tools.simulator.metrics import FairnessWindows, StrategyResult, TeamResult

BASE = StrategyResult(name="x", utilization=0.9, wait_p50_s=0, wait_p95_s=100, wait_mean_s=0, preemptions=0,
                      lost_gpu_hours=10, entitlement_deficit_gpu_hours=1000, jain_index=0.8, quota_changes=0,
                      jobs_completed=1, jobs_unfinished=0, failure_kills=0, failure_lost_gpu_hours=0, makespan_s=1)


def results(**rebalancer: float) -> dict[str, StrategyResult]:
    return {"builtin": BASE, "pooled": dataclasses.replace(BASE, wait_p95_s=40.0),
            "rebalancer": dataclasses.replace(BASE, **rebalancer)}


def team(p95_s: float, jobs: int = 20, received: float = 100, entitled: float = 100) -> TeamResult:
    return TeamResult(jobs=jobs, jobs_completed=jobs, wait_p50_s=0, wait_p95_s=p95_s, wait_mean_s=0, preemptions=0,
                      lost_gpu_hours=0, received_gpu_hours=received, entitled_gpu_hours=entitled,
                      entitlement_deficit_gpu_hours=0, quota_changes=0)


H = 3600.0


def test_each_goal_is_met_or_missed_from_the_figures() -> None:
    # delivered: 4,000 GPU-h, so up to 20 GPU-h may be lost (builtin lost 10)
    good = results(utilization=0.895, wait_p95_s=42.0, entitlement_deficit_gpu_hours=200.0, lost_gpu_hours=20.0,
                   jain_index=0.8, fairness=FairnessWindows(168, 4, 0.5, 0.8), eta=EtaAccuracy(10, 0.7, 1.0, 0))
    bad = results(utilization=0.88, wait_p95_s=42.1, entitlement_deficit_gpu_hours=200.4, lost_gpu_hours=20.5,
                  jain_index=0.79, fairness=FairnessWindows(168, 4, 0.49, 0.79), eta=EtaAccuracy(10, 0.69, 1.0, 0))
    for r, slack in ((good, 0.0), (bad, 1.0)):
        r["builtin"] = dataclasses.replace(r["builtin"], fairness=FairnessWindows(168, 4, 0.5, 0.6), teams={
            "t": team(H), "big": team(H, received=300), "s1": team(H, 3), "s2": team(2 * H, 19),
            "s3": team(3 * H, 10), "crowd": team(H, received=3600)})
        r["rebalancer"] = dataclasses.replace(r["rebalancer"], teams={
            "t": team(1.1 * H + 600 + slack),  # a team builtin served no more than its share: 1.1 × + 10 min
            "big": team(10 * H, received=300),  # builtin over-served it: not held to its builtin p95
            # the small teams' median p95 (s1's) at builtin's median (s2's) + 1 h; s2 and s3 within their own rule
            "s1": team(3 * H + slack, 3), "s2": team(2.3 * H, 19), "s3": team(3.3 * H, 10),
            "crowd": team(H, received=3300)})
    a, b = SCENARIOS[:2]
    lines = goal_table({a.key: good, b.key: bad}, [a, b])
    assert lines[2] == (f"| {a.title} | 0.994 ✓ | 1.050 ✓ | 0.200 ✓ | 0.800 vs 0.800 ✓ | 20 vs 20 ✓ | none ✓ | "
                        "3.0 h vs 2.0 h ✓ | 0.800 ✓ | 0.500 vs 0.500 ✓ | 0.700 ✓ |")
    assert lines[3].count("✗") == 10
    assert "| 0.2004 ✗ |" in lines[3]  # at 3 decimals it would read as the threshold itself
    assert "| t ✗ |" in lines[3]
    assert lines[-1] == "10 of 20 goals met."
    unmeasured = goal_table({a.key: results()}, [a])
    assert unmeasured[2].endswith("| not measured ✗ |")


def test_each_scenario_lists_its_goals_met_and_missed() -> None:
    r = results(utilization=0.88, wait_p95_s=40.0, entitlement_deficit_gpu_hours=100.0, lost_gpu_hours=0.0,
                jain_index=0.9)
    got = goals(r)
    assert len(got) == len(GOALS)
    assert got[0] == "- ✗ util ÷ pooled ≥ 0.99: 0.978"
    assert got[1] == "- ✓ p95 wait ÷ pooled ≤ 1.05: 1.000"
    assert got[6] == "- ✓ small teams (3-19 jobs): median p95 ≤ builtin's + 1 h: no small team"


def test_the_trace_command_refuses_an_unknown_kind() -> None:
    got = CliRunner().invoke(cli, ["trace", "--kinds", "bursty,weird", "-o", "/dev/null"])
    assert got.exit_code == 2
    assert "--kinds: unknown kind 'weird'" in got.stderr
