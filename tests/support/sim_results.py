"""Simulator results made by hand, every figure zero but the ones a test sets: a team's jobs and p95 wait."""

from __future__ import annotations

from rebalancer_tools.simulator.metrics import StrategyResult, TeamResult


def team_result(jobs: int, p95_h: float) -> TeamResult:
    return TeamResult(jobs=jobs, jobs_completed=jobs, wait_p50_s=0, wait_p95_s=p95_h * 3600, wait_mean_s=0,
                      preemptions=0, lost_gpu_hours=0, received_gpu_hours=0, entitled_gpu_hours=0,
                      entitlement_deficit_gpu_hours=0, quota_changes=0)


def strategy_result(name: str, teams: dict[str, TeamResult]) -> StrategyResult:
    return StrategyResult(name=name, utilization=1, wait_p50_s=0, wait_p95_s=0, wait_mean_s=0, preemptions=0,
                          lost_gpu_hours=0, entitlement_deficit_gpu_hours=0, jain_index=1, quota_changes=0,
                          jobs_completed=0, jobs_unfinished=0, failure_kills=0, failure_lost_gpu_hours=0,
                          makespan_s=0, teams=teams)
