"""Fair share over a window in the simulator: the controller meters what each team runs as collect does, feeds the
same trailing-use accumulator the plan step reads, and a team starved by the instantaneous share is served."""

from __future__ import annotations

import dataclasses
from datetime import timedelta

from rebalancer.domain.policy import Policy
from rebalancer_tools.simulator import metrics
from rebalancer_tools.simulator import run as sim_run
from rebalancer_tools.simulator.controller import EPOCH, PlannerController
from rebalancer_tools.simulator.engine import ControllerView
from rebalancer_tools.simulator.metrics import RawResult
from rebalancer_tools.simulator.run import Scenario
from rebalancer_tools.simulator.teams import TeamSpec
from rebalancer_tools.simulator.trace import TraceJob

P5 = "ml.p5.48xlarge"
H = 3600.0


def windowed(window: float | None, **team: object) -> Policy:
    return Policy.model_validate({"teams": {"a": dict(team), "b": dict(team)},
                                  "fairness": {"window_hours": window}, "stability": {"cooldown_minutes": 0}})


def view(now_s: float, in_use: dict[str, int], pending: dict[str, int]) -> ControllerView:
    return ControllerView(now_s=now_s, healthy_nodes={P5: 2}, failed_nodes={P5: 0},
                          quotas={"a": {P5: 8}, "b": {P5: 8}}, quota_versions={"a": 1, "b": 1},
                          quota_modified_s={"a": 0, "b": 0}, in_use={t: {P5: n} for t, n in in_use.items()},
                          pending={t: {P5: n} for t, n in pending.items()})


def test_the_controller_meters_each_tick_into_the_window_and_the_team_that_ran_less_gets_more() -> None:
    decisions = {}
    for window in (None, 24.0):
        controller = PlannerController(windowed(window, protected_in_use=False),
                                       [TeamSpec("a", 1, 8), TeamSpec("b", 1, 8)], P5, 2)
        for tick in range(12):  # three hours: a runs 16 GPUs (8 borrowed), b nothing
            controller(view(tick * 900.0, {"a": 16, "b": 0}, {"a": 16, "b": 0}))
        decisions[window] = controller(view(12 * 900.0, {"a": 16, "b": 0}, {"a": 16, "b": 16}))
    assert controller.meter.trailing is not None
    assert controller.meter.trailing.hours(EPOCH + timedelta(hours=3)) == {"a": {P5: 16 * 3.0}}
    assert decisions[None] is None  # the instantaneous share: 8 and 8, as the quotas are
    # a received all of the window's hours against half: × 0.5, b × 2 → 16 split 1 : 4
    assert decisions[24.0] is not None
    assert decisions[24.0].quotas == {"a": {P5: 3}, "b": {P5: 13}}


def _weeks(sc: Scenario, policy: Policy) -> list[list[float | None]]:
    raws: list[RawResult] = []
    summarize = sim_run.summarize

    def keep(name: str, raw: RawResult) -> metrics.StrategyResult:
        raws.append(raw)
        return summarize(name, raw)

    sim_run.summarize = keep  # type: ignore[assignment]
    try:
        sim_run.run_strategy(dataclasses.replace(sc, policy=policy), "rebalancer")
    finally:
        sim_run.summarize = summarize  # type: ignore[assignment]
    return metrics.team_weeks(raws[0])


def test_a_gang_team_starved_by_the_instant_share_is_served_within_the_week_with_the_window_on() -> None:
    # 24 GPUs; a keeps them busy with 1-GPU jobs, b wants a 16-GPU gang every 6 h. Its instantaneous share (12)
    # is below its gang, and a borrows whatever b leaves: b gets a quarter of its share in week one. With the window b's
    # unused share raises its weight until its quota holds a gang.
    jobs = [TraceJob(f"a{i}", "a", i * 600.0, 4 * H, 1) for i in range(4 * 24 * 6)]
    jobs += [TraceJob(f"b{i}", "b", i * 6 * H, 6 * H, 16) for i in range(4 * 4)]
    sc = Scenario(jobs=sorted(jobs, key=lambda j: j.submit_s), teams=(TeamSpec("a", 1, 12), TeamSpec("b", 1, 12)),
                  nodes=3)
    plain = _weeks(sc, windowed(None, protected_in_use=False))
    window = _weeks(sc, windowed(168, protected_in_use=False))
    worst = [min(x for x in weeks[1] if x is not None) for weeks in (plain, window)]
    assert worst[0] < 0.3 < 0.35 < worst[1]  # b's worst week: 0.26 without the window, 0.38 with it
