"""The two-team history of the replay tests (b bursts every morning) and a replay of a policy over a history from
its first state."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from rebalancer.domain.policy import Policy
from rebalancer_tools.backtest import synthetic as syn
from rebalancer_tools.backtest.replay import Replay, prepare, replay


def policy(**stability: Any) -> Policy:
    return Policy.model_validate({"stability": stability, "teams": {"a": {}, "b": {}}})


def morning_bursts(team: str, at: datetime) -> tuple[float, float]:
    """a runs 16 and wants 8 more all day; b wants 16 from 08:00 to 08:30 (UTC) and nothing otherwise."""
    if team == "a":
        return 16.0, 8.0
    burst = at.hour == 8 and at.minute < 30
    return (0.0, 16.0) if burst else (0.0, 0.0)


def run(h: syn.History, p: Policy, **kw: Any) -> Replay:
    states = h.states()
    return replay("p", prepare(states), p, states[0], **kw)
