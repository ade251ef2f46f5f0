"""What would make a simulation silently say nothing: a policy that names none of the trace's teams (the rebalancer
strategy then plans with defaults and equals builtin), and jobs larger than their pool (they never start)."""

from __future__ import annotations

from collections.abc import Sequence

from rebalancer.domain.policy import Policy
from rebalancer_tools.simulator.run import Scenario

SHOWN = 5  # names listed in a warning before "…"


def _listed(names: Sequence[str]) -> str:
    return ", ".join(names[:SHOWN]) + (f" and {len(names) - SHOWN} more" if len(names) > SHOWN else "")


def scenario_warnings(scenario: Scenario, policy: Policy | None) -> list[str]:
    out = []
    teams = sorted({t.name for t in scenario.teams})
    if policy is not None and teams and not set(policy.teams) & set(teams):
        out.append(f"the policy names none of the trace's teams ({_listed(teams)}; the policy has "
                   f"{_listed(sorted(policy.teams))}): the rebalancer strategy plans them with default weights, "
                   "so it shows what builtin shows")
    for pool, jobs, capacity, _per_node in scenario.jobs_by_pool():
        too_big = sorted((j for j in jobs if j.gpus > capacity), key=lambda j: -j.gpus)
        if too_big:
            out.append(f"{len(too_big)} job(s) ask for more accelerators than {pool} has ({capacity}): they never "
                       f"run (largest: {too_big[0].job_id}, {too_big[0].gpus})")
    return out
