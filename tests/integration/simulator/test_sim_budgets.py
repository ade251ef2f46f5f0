"""Budgets in the simulator: the `rebalancer` strategy meters each team as production does, and a team that has
used its budget is held at its guarantee for the rest of the period."""

from __future__ import annotations

from rebalancer.domain.policy import Policy
from rebalancer_tools.simulator import Scenario, run_strategy
from rebalancer_tools.simulator.teams import TeamSpec
from rebalancer_tools.simulator.trace import TraceJob

HOUR = 3600.0
GPU = "ml.p4d.24xlarge"


def scenario(policy: Policy) -> Scenario:
    # Two 8-GPU nodes. "heavy" keeps 16 GPUs busy for two days of hour-long jobs; "light" runs 4 GPUs for an hour
    # a day. Both start from an 8-GPU quota.
    jobs = [TraceJob(f"h{k}", "heavy", k * HOUR, HOUR, 8) for k in range(48) for _ in range(2)]
    jobs = [TraceJob(f"{j.job_id}-{n}", j.team, j.submit_s, j.duration_s, j.gpus) for n, j in enumerate(jobs)]
    jobs += [TraceJob(f"l{d}", "light", d * 24 * HOUR, HOUR, 4) for d in range(2)]
    return Scenario(jobs=jobs, teams=[TeamSpec("heavy", 1, 8), TeamSpec("light", 1, 8)], nodes=2,
                    controller_interval_s=900, apply_delay_s=0, policy=policy)


def policy(budget_hours: float | None) -> Policy:
    heavy: dict[str, object] = {"weight": 1, "guarantee": {GPU: 4}}
    if budget_hours is not None:
        heavy["budget"] = {"accelerator_hours": budget_hours, "on_exhausted": "guarantee_only"}
    return Policy.model_validate({"teams": {"heavy": heavy, "light": {"weight": 1, "guarantee": {GPU: 4}}},
                                  "stability": {"cooldown_minutes": 0, "max_move": None}})


def test_a_budget_holds_the_team_at_its_guarantee_once_used_up() -> None:
    free = run_strategy(scenario(policy(None)), "rebalancer")
    capped = run_strategy(scenario(policy(200)), "rebalancer")
    assert free.budgets == {}
    [(period, used)] = capped.budgets["heavy"].items()
    assert period == "2026-01"
    assert used["percent"] >= 100
    # Past its budget heavy keeps only its 4 guaranteed GPUs of quota, so it receives less than without a budget.
    assert capped.teams["heavy"].received_gpu_hours < free.teams["heavy"].received_gpu_hours
    assert capped.teams["heavy"].wait_p95_s > free.teams["heavy"].wait_p95_s
