"""A plan that would preempt running work is written `reclaim.notice_minutes` later in the simulator, as the
controller we deploy tells the teams and waits before the write."""

from __future__ import annotations

from typing import Any

import pytest

from rebalancer.domain.policy import Policy
from rebalancer_tools.simulator.run import Scenario, run_strategy
from rebalancer_tools.simulator.teams import TeamSpec
from rebalancer_tools.simulator.trace import TraceJob


def _a_waits(reclaim: dict[str, Any]) -> float:
    """b runs 16 GPUs on its own quota; a's 8-GPU job arrives at 1,000 s. The plan at 1,800 s gives a 8 of b's 16,
    which makes b's newest job borrowed work that a takes back: the plan preempts it."""
    jobs = [TraceJob("b1", "b", 0, 100000, 8), TraceJob("b2", "b", 10, 100000, 8), TraceJob("a1", "a", 1000, 600, 8)]
    policy = Policy.model_validate({"teams": {"a": {}, "b": {}}, "reclaim": reclaim,
                                    "stability": {"cooldown_minutes": 0}})
    sc = Scenario(jobs=jobs, teams=[TeamSpec("a", 1, 0), TeamSpec("b", 1, 16)], nodes=2, policy=policy)
    result = run_strategy(sc, "rebalancer")
    assert result.teams["b"].preemptions == 1
    return result.teams["a"].wait_p95_s


@pytest.mark.parametrize("reclaim", [{}, {"max_gpu_hours": 0}], ids=["reclaim on", "reclaim off"])
def test_a_plan_that_preempts_is_written_after_its_notice(reclaim: dict[str, Any]) -> None:
    told_at_once = _a_waits(reclaim)
    assert told_at_once == 1800 + 120 - 1000  # the plan's run, then the apply delay
    assert _a_waits({**reclaim, "notice_minutes": 60}) == told_at_once + 3600
