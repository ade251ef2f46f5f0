"""Budget news: metrics every run, each threshold once per period, and one summary when a period has ended."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import pytest
from support.clusters import snapshot

from rebalancer.app.budgets import announce, period_to_date
from rebalancer.budgets.metering import Reading
from rebalancer.domain.policy import Policy
from rebalancer_tools.memory_store import MemoryMeter

P5 = "ml.p5.48xlarge"
CLUSTER = "test"  # support.clusters.snapshot's
POLICY = Policy.model_validate({"teams": {"research": {"budget": {"accelerator_hours": 100}}, "ops": {}}})


@dataclass
class Outlet:
    sent: list[tuple[str, tuple[str, ...]]] = field(default_factory=list)
    recorded: list[dict[str, tuple[float, float]]] = field(default_factory=list)

    def send(self, kind: str, lines: tuple[str, ...]) -> None:
        self.sent.append((kind, lines))

    def record(self, cluster: str, used: dict[str, tuple[float, float]]) -> None:
        self.recorded.append(used)


def metered(start: datetime, hours: float, gpus: float, meter: MemoryMeter | None = None) -> MemoryMeter:
    """`gpus` of research's in use for `hours` from `start`, as two readings of the support cluster metered."""
    meter = meter or MemoryMeter()
    for at in (start, start + timedelta(hours=hours)):
        meter.record(CLUSTER, Reading(at=at, rates={"research": {P5: (gpus, 0)}}), timedelta(days=1))
    return meter


def run(store: MemoryMeter, at: datetime, outlet: Outlet) -> list[str]:
    snap = snapshot({P5: 4}, taken_at=at)
    return announce(store, POLICY, snap, period_to_date(store, snap.cluster.ClusterName, POLICY, at), outlet)


def test_thresholds_are_announced_once_and_metrics_every_run() -> None:
    nov = datetime(2026, 11, 10, tzinfo=UTC)
    store, outlet = metered(nov, 7, 8), Outlet()  # 56 of 100
    run(store, nov + timedelta(hours=7), outlet)
    run(store, nov + timedelta(hours=7, minutes=15), outlet)
    assert [k for k, _ in outlet.sent] == ["budget"]
    assert "passed 50 %" in outlet.sent[0][1][0]
    assert [list(r) for r in outlet.recorded] == [["research"]] * 2  # ops has no budget: no metric
    assert outlet.recorded[0]["research"] == pytest.approx((56.0, 56.0))
    metered(nov + timedelta(hours=7), 4, 8, store)  # 88 of 100
    run(store, nov + timedelta(hours=11), outlet)
    assert outlet.sent[-1][0] == "budget"
    assert "passed 80 %" in outlet.sent[-1][1][0]
    assert "50 %" not in outlet.sent[-1][1][0].split("passed")[1]


def test_a_new_period_starts_counting_again_and_the_last_one_is_summarised_once() -> None:
    nov = datetime(2026, 11, 30, 20, tzinfo=UTC)
    store, outlet = metered(nov, 4, 16), Outlet()  # 64 in November
    run(store, nov + timedelta(hours=3, minutes=59), outlet)
    outlet.sent.clear()
    dec = datetime(2026, 12, 1, 0, 30, tzinfo=UTC)
    lines = run(store, dec, outlet)
    assert [k for k, _ in outlet.sent] == ["budget_summary"]
    assert lines == ["research: budget 64 % used (64 of 100 accelerator-hours, 2026-11)"]
    assert run(store, dec + timedelta(minutes=15), outlet) == []
