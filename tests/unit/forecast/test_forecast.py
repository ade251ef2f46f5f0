"""The forecast's controller and its answers: the staged plan applies after its delay, the planner runs every
interval (never while a plan waits to be applied, never more than its runs), the range replays the point's plans;
a workload that cannot start says why; past a deadline the forecasts stop, and say so."""

from __future__ import annotations

import math
import random

import pytest

from rebalancer.forecast.deadline import Deadline
from rebalancer.forecast.durations import Drawn, History
from rebalancer.forecast.engine import Controller, Quotas, forecast
from rebalancer.forecast.estimate import Estimate, estimate
from rebalancer.forecast.model import Cluster, Pool, Queue, Running, Start, Waiting

H = 3600.0
P = "ml.p5.48xlarge"
HOURLY = History({"a": (H,) * 10, "b": (H,) * 10})


class Exactly:
    """Every workload runs one hour (a test's durations)."""

    def remaining(self, job: Running, at: float) -> float:
        return H - (at - job.started)

    def duration(self, job: Waiting) -> float:
        return H


def cluster(a_quota: float, *, borrow: bool = False, capacity: float = 16, waiting: float = 16) -> Cluster:
    """b runs 8 since now on 16; a, with `a_quota`, waits for a gang of `waiting`."""
    queues = (Queue("a", a_quota, borrow=borrow, lend=borrow), Queue("b", 8, borrow=borrow, lend=borrow))
    return Cluster(0.0, (Pool(P, capacity, queues, running=(Running("b-1", "b", 8, 0.0),),
                              waiting=(Waiting("a-1", "a", waiting, 0.0),)),))


def test_the_staged_plan_applies_after_its_delay() -> None:
    never = forecast(cluster(8), Exactly()).starts
    assert never == {"a-1": Start(None, "never_admitted")}
    staged = Controller(lambda _: None, staged=(120.0, {"a": {P: 16}}), max_replans=0)
    assert forecast(cluster(8), Exactly(), controller=staged).starts == {"a-1": Start(H)}  # b's run frees 8 at 1 h


def test_the_planner_runs_every_interval_within_its_runs_and_not_while_a_plan_waits() -> None:
    asked: list[tuple[float, float]] = []

    def replan(c: Cluster) -> Quotas | None:
        asked.append((c.at, c.pools[0].queues[0].nominal))
        return {"a": {P: 16}} if c.at >= 1800 else None

    got = forecast(cluster(8), Exactly(), controller=Controller(replan, 900.0, 600.0, max_replans=8))
    # 900: nothing; 1800: raise staged until 2400, so 2700 plans again with it applied; a starts when b ends (1 h)
    assert asked[:3] == [(900.0, 8), (1800.0, 8), (2700.0, 16)]
    assert got.starts == {"a-1": Start(H)}
    assert got.plans == {1800.0: {"a": {P: 16}}}
    few = Controller(lambda c: asked.append((c.at, 0)) or None, 900.0, 120.0, max_replans=2)
    asked.clear()
    forecast(cluster(8), Exactly(), controller=few)
    assert [t for t, _ in asked] == [900.0, 1800.0]


def test_the_range_replays_the_points_plans_instead_of_planning_again() -> None:
    calls: list[float] = []

    def replan(c: Cluster) -> Quotas | None:
        calls.append(c.at)
        return {"a": {P: 16}}

    got = estimate(cluster(8), HOURLY, controller=Controller(replan, 900.0, 120.0, max_replans=4))
    # the point forecast's four runs (a starts when b's run ends, at 1 h); the two of the range plan nothing
    assert calls == [900.0, 1800.0, 2700.0, 3600.0]
    assert got["a-1"] == Estimate(H, H, H)


def test_a_workload_that_cannot_start_says_why() -> None:
    assert forecast(cluster(8, waiting=32), Exactly()).starts["a-1"] == Start(None, "larger_than_pool")
    assert forecast(cluster(8), Exactly()).starts["a-1"] == Start(None, "never_admitted")
    far = forecast(cluster(16), Exactly(), horizon_s=600.0).starts["a-1"]
    assert far == Start(None, "beyond_horizon")
    nothing_finished = estimate(cluster(16), History())["a-1"]
    assert nothing_finished == Estimate(None, unknown="no_history")
    assert estimate(cluster(16), HOURLY)["a-1"] == Estimate(H, H, H)


def test_borrowing_starts_a_gang_over_its_quota_within_the_borrow_limit() -> None:
    # a (4) may borrow 50 % (2) of what b lends: a gang of 6 starts now, the next one (5) when it ends; one of 8
    # is more than a may ever hold
    queues = (Queue("a", 4, borrow_limit_percent=50), Queue("b", 12, borrow_limit_percent=50))
    pool = Pool(P, 16, queues, running=(Running("b-1", "b", 8, 0.0),),
                waiting=(Waiting("a-6", "a", 6, 0.0), Waiting("a-5", "a", 5, 1.0), Waiting("a-8", "a", 8, 2.0)))
    got = forecast(Cluster(0.0, (pool,)), Exactly()).starts
    assert got == {"a-6": Start(0.0), "a-5": Start(H), "a-8": Start(None, "never_admitted")}


def test_a_workload_of_a_team_without_a_queue_is_refused_by_name() -> None:
    pool = Pool(P, 16, (Queue("a", 8),), waiting=(Waiting("x-1", "x", 1, 0.0),))
    with pytest.raises(ValueError, match=r"^a workload of team 'x' in pool ml\.p5\.48xlarge, which lists no queue "
                                         r"of that team$"):
        forecast(Cluster(0.0, (pool,)), Exactly())


class Reads:
    """A clock that counts its reads: it reads `n` after the n-th."""

    def __init__(self) -> None:
        self.n = 0

    def __call__(self) -> float:
        self.n += 1
        return float(self.n)


def test_a_forecast_past_its_deadline_keeps_the_starts_it_reached_and_says_why_for_the_rest() -> None:
    two = Cluster(0.0, (Pool(P, 16, (Queue("a", 16), Queue("b", 8)), running=(Running("b-1", "b", 8, 0.0),),
                             waiting=(Waiting("a-1", "a", 8, 0.0), Waiting("a-2", "a", 8, 0.0))),))
    assert forecast(two, Exactly()).starts == {"a-1": Start(0.0), "a-2": Start(H)}  # a-2 when b's run ends
    passed = Deadline(0.0, clock=lambda: 1.0)
    assert forecast(two, Exactly(), deadline=passed).starts == {"a-1": Start(0.0), "a-2": Start(None, "out_of_time")}
    assert passed.reached
    later = Deadline(2.0, clock=lambda: 1.0)
    assert forecast(two, Exactly(), deadline=later).starts == {"a-1": Start(0.0), "a-2": Start(H)}
    assert not later.reached


def test_past_the_deadline_the_estimate_rests_on_the_forecasts_already_made() -> None:
    spread = History({"a": (H,) * 5, "b": tuple(k * H for k in range(1, 11))})  # b's run ends after 1 to 10 hours
    whole = estimate(cluster(16), spread)["a-1"]
    assert whole.earliest is not None
    assert whole.latest is not None
    assert whole.earliest < whole.latest
    counting = Reads()  # the first forecast alone, as estimate draws it: how often it reads the clock
    first = forecast(cluster(16), Drawn(spread, random.Random(f"{0.0!r}:0")), deadline=Deadline(math.inf, counting))
    start = first.starts["a-1"].at
    # the deadline passes at the first read after the first forecast: the others are not made
    cut = Deadline(counting.n + 0.5, clock=Reads())
    assert start != whole.start
    assert estimate(cluster(16), spread, deadline=cut)["a-1"] == Estimate(start, start, start)
    assert cut.reached
    assert estimate(cluster(16), spread, deadline=Deadline(0.0, clock=lambda: 1.0))["a-1"] == \
        Estimate(None, unknown="out_of_time")


def test_the_estimate_draws_its_durations_the_way_it_is_given() -> None:
    class TwoHours(Exactly):
        def remaining(self, job: Running, at: float) -> float:
            return 2 * H - (at - job.started)

    assert estimate(cluster(16), HOURLY)["a-1"] == Estimate(H, H, H)
    assert estimate(cluster(16), HOURLY, draw=lambda _history, _rng: TwoHours())["a-1"] == Estimate(2 * H, 2 * H, 2 * H)
