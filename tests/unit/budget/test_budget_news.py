"""Budget news: figures every run, each threshold once per period, and one summary when a period has ended, each
line claimed by the run that first says it (and said again only by that run, when its step is retried)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from support.clusters import snapshot

from rebalancer.app.budgets import figures, news, period_to_date
from rebalancer.budgets.metering import Reading
from rebalancer.domain.policy import Policy
from rebalancer_tools.fakes.memory_store import MemoryMeter

P5 = "ml.p5.48xlarge"
CLUSTER = "test"  # support.clusters.snapshot's
POLICY = Policy.model_validate({"teams": {"research": {"budget": {"accelerator_hours": 100}}, "ops": {}}})

def metered(start: datetime, hours: float, gpus: float, meter: MemoryMeter | None = None) -> MemoryMeter:
    """`gpus` of research's in use for `hours` from `start`, as two readings of the support cluster metered."""
    meter = meter or MemoryMeter()
    for at in (start, start + timedelta(hours=hours)):
        meter.record(CLUSTER, Reading(at=at, rates={"research": {P5: (gpus, 0)}}), timedelta(days=1))
    return meter


def run(store: MemoryMeter, at: datetime, name: str | None = None) -> tuple[list[str], list[str]]:
    """The news of the run at `at` (named after its time unless `name` is given)."""
    snap = snapshot({P5: 4}, taken_at=at)
    usage = period_to_date(store, snap.cluster.ClusterName, POLICY, at)
    return news(store, POLICY, snap, usage, name or f"run-{at.isoformat()}")


def test_thresholds_are_news_once_and_figures_every_run() -> None:
    nov = datetime(2026, 11, 10, tzinfo=UTC)
    store = metered(nov, 7, 8)  # 56 of 100
    [first], _ = run(store, nov + timedelta(hours=7))
    assert "passed 50 %" in first
    assert run(store, nov + timedelta(hours=7, minutes=15)) == ([], [])
    usage = period_to_date(store, CLUSTER, POLICY, nov + timedelta(hours=7))
    assert figures(POLICY, usage) == {"research": pytest.approx((56.0, 56.0))}  # ops has no budget: no figure
    metered(nov + timedelta(hours=7), 4, 8, store)  # 88 of 100
    [line], _ = run(store, nov + timedelta(hours=11))
    assert "passed 80 %" in line
    assert "50 %" not in line.split("passed")[1]


def test_a_retried_step_says_again_what_its_run_claimed_and_no_other_run_does() -> None:
    nov = datetime(2026, 11, 10, tzinfo=UTC)
    store = metered(nov, 7, 8)
    at = nov + timedelta(hours=7)
    first = run(store, at, "run-1")
    assert first[0]
    assert run(store, at, "run-1") == first  # the Plan step of run-1 again, after a transient failure
    assert run(store, at, "run-2") == ([], [])


def test_a_new_period_starts_counting_again_and_the_last_one_is_summarised_once() -> None:
    nov = datetime(2026, 11, 30, 20, tzinfo=UTC)
    store = metered(nov, 4, 16)  # 64 in November
    run(store, nov + timedelta(hours=3, minutes=59))
    dec = datetime(2026, 12, 1, 0, 30, tzinfo=UTC)
    crossed, summaries = run(store, dec)
    assert crossed == []
    assert summaries == ["research: budget 64 % used (64 of 100 accelerator-hours, 2026-11)"]
    assert run(store, dec + timedelta(minutes=15)) == ([], [])
