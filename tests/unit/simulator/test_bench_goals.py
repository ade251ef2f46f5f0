"""The bench's goal table: each goal judged from the figures as they are, met or missed, one row per scenario."""

from __future__ import annotations

import dataclasses

from click.testing import CliRunner

from rebalancer_tools.cli import cli
from rebalancer_tools.simulator.bench import SCENARIOS, goal_table
from rebalancer_tools.simulator.eta import EtaAccuracy
from rebalancer_tools.simulator.metrics import FairnessWindows, StrategyResult, TeamResult

BASE = StrategyResult(name="x", utilization=0.9, wait_p50_s=0, wait_p95_s=100, wait_mean_s=0, preemptions=0,
                      lost_gpu_hours=10, entitlement_deficit_gpu_hours=1000, jain_index=0.8, quota_changes=0,
                      jobs_completed=1, jobs_unfinished=0, failure_kills=0, failure_lost_gpu_hours=0, makespan_s=1)


def results(**rebalancer: float) -> dict[str, StrategyResult]:
    return {"builtin": BASE, "pooled": dataclasses.replace(BASE, wait_p95_s=40.0),
            "rebalancer": dataclasses.replace(BASE, **rebalancer)}


def team(p95_s: float) -> TeamResult:
    return TeamResult(jobs=20, jobs_completed=20, wait_p50_s=0, wait_p95_s=p95_s, wait_mean_s=0, preemptions=0,
                      lost_gpu_hours=0, received_gpu_hours=0, entitled_gpu_hours=0, entitlement_deficit_gpu_hours=0,
                      quota_changes=0)


def test_each_goal_is_met_or_missed_from_the_figures() -> None:
    good = results(utilization=0.895, wait_p95_s=40.0, entitlement_deficit_gpu_hours=200.0, lost_gpu_hours=10.0,
                   jain_index=0.8, fairness=FairnessWindows(168, 4, 0.8, 0.9), eta=EtaAccuracy(10, 0.7, 1.0, 0))
    bad = results(utilization=0.88, wait_p95_s=51.0, entitlement_deficit_gpu_hours=200.4, lost_gpu_hours=10.5,
                  jain_index=0.79, fairness=FairnessWindows(168, 4, 0.79, 0.9), eta=EtaAccuracy(10, 0.69, 1.0, 0))
    for r, p95 in ((good, 1.1 * 3600 + 600), (bad, 1.1 * 3600 + 601)):
        r["builtin"] = dataclasses.replace(r["builtin"], teams={"t": team(3600)})
        r["rebalancer"] = dataclasses.replace(r["rebalancer"], teams={"t": team(p95)})
    a, b = SCENARIOS[:2]
    lines = goal_table({a.key: good, b.key: bad}, [a, b])
    assert lines[2] == (f"| {a.title} | 0.994 met | 1.000 met | 0.400 met | 0.200 met | 10 vs 10 (1.00) met | "
                        "0.800 vs 0.800 met | none met | 0.800 met | 0.700 met |")
    assert lines[3].count("**missed**") == 9
    assert "| 0.2004 **missed** |" in lines[3]  # at 3 decimals it would read as the threshold itself
    assert "| t **missed** | 0.790 **missed** | 0.690 **missed** |" in lines[3]
    assert lines[-1] == "9 of 18 goals met."
    unmeasured = goal_table({a.key: results()}, [a])
    assert unmeasured[2].endswith("| not measured **missed** |")


def test_the_trace_command_refuses_an_unknown_kind() -> None:
    got = CliRunner().invoke(cli, ["trace", "--kinds", "bursty,weird", "-o", "/dev/null"])
    assert got.exit_code == 2
    assert "--kinds: unknown kind 'weird'" in got.stderr
