"""Utilization metrics from a snapshot: per team idle allocated and pending accelerators, and per cluster the
accelerators stranded (idle in one team while another waits) and an imbalance score (stranded ÷ capacity, 0..1).
The template's alarms on these start a rebalance. Each observation also stores a light demand sample
(rebalancer.domain.sample) per cluster: the history a policy is backtested on."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Protocol

from aws_lambda_powertools.metrics import MetricUnit, single_metric
from botocore.exceptions import BotoCoreError, ClientError

from rebalancer.app import budgets
from rebalancer.app.observability import NAMESPACE
from rebalancer.catalog import specs as catalog
from rebalancer.domain.sample import DemandSample, sample_of
from rebalancer.domain.snapshot import Snapshot
from rebalancer.errors import RebalancerError, UnknownInstanceType


class Samples(Protocol):
    """rebalancer.adapters.dynamodb.samples; rebalancer_tools.fakes.memory_store.MemorySamples."""

    def put(self, sample: DemandSample, retention: timedelta) -> None: ...


class MeterAndSamples(Protocol):
    """The metered readings (rebalancer.app.budgets.MeterRecords) and the demand samples the backtest replays."""

    @property
    def meter(self) -> budgets.MeterRecords: ...
    @property
    def samples(self) -> Samples: ...


@dataclass(frozen=True, slots=True)
class TeamUsage:
    team: str
    allocated: float
    in_use: float
    pending: float

    @property
    def idle(self) -> float:
        return max(0.0, self.allocated - self.in_use)


@dataclass(frozen=True, slots=True)
class Imbalance:
    cluster: str
    capacity: float
    teams: tuple[TeamUsage, ...]

    @property
    def stranded(self) -> float:
        return min(sum(t.idle for t in self.teams), sum(t.pending for t in self.teams))

    @property
    def score(self) -> float:
        return self.stranded / self.capacity if self.capacity else 0.0


def _accelerator_types(snapshot: Snapshot) -> list[str]:
    out = []
    for itype in snapshot.instance_types():
        try:
            spec = catalog.spec(itype)
        except UnknownInstanceType:  # an unknown type holds no accelerators we can count
            continue
        if spec.primary_resource == "accelerators":
            out.append(itype)
    return out


def measure(snapshot: Snapshot) -> Imbalance:
    types = _accelerator_types(snapshot)
    healthy = snapshot.healthy_nodes()
    capacity = sum(healthy[t] * catalog.spec(t).accelerators for t in types)
    teams = {q.team for q in snapshot.quotas} | set(snapshot.demand)
    usage = []
    for team in sorted(teams):
        quota = snapshot.quota_of(team)
        allocated = 0.0
        for t in types:
            r = quota.resource(t) if quota else None
            if r is not None and r.Accelerators is not None:
                allocated += r.Accelerators
            elif r is not None:
                allocated += (r.Count or 0) * catalog.spec(t).accelerators
        in_use = sum(snapshot.demand_of(team, t).in_use.accelerators for t in types)
        pending = sum(snapshot.demand_of(team, t).pending.accelerators for t in types)
        usage.append(TeamUsage(team, allocated, in_use, pending))
    return Imbalance(snapshot.cluster.ClusterName, float(capacity), tuple(usage))


def observe(snapshots: Sequence[Snapshot], store: MeterAndSamples, retention: timedelta,
            warn: Callable[[str], None] = lambda _message: None) -> list[Imbalance]:
    """Each cluster's snapshot measured, metered for the teams' budgets and stored as a demand sample (kept
    `retention`). A reading or sample DynamoDB refuses is a warning, not a failure: the metrics (which the alarms
    watch) still go out. A missed reading loses no use: the next one meters the whole interval (marked estimated);
    a missed sample leaves a gap in the history."""
    out = []
    for snapshot in snapshots:
        name = snapshot.cluster.ClusterName
        out.append(measure(snapshot))
        try:
            budgets.meter(store.meter, snapshot)
        except (ClientError, BotoCoreError, RebalancerError) as e:  # a read of the table says its kind (aws_call)
            warn(f"use of {name} not metered this time (the next reading covers the interval): {e}")
        try:
            store.samples.put(sample_of(snapshot), retention)
        except (ClientError, BotoCoreError, RebalancerError) as e:
            warn(f"demand sample of {name} not stored: {e}")
    return out


def publish_team_metrics(m: Imbalance) -> None:
    """Per team of one cluster: idle allocated and pending accelerators (Powertools EMF, one metric each)."""
    for team in m.teams:
        for name, value in (("IdleAllocatedAccelerators", team.idle), ("PendingAccelerators", team.pending)):
            with single_metric(name=name, unit=MetricUnit.Count, value=value, namespace=NAMESPACE) as metric:
                metric.add_dimension(name="ClusterName", value=m.cluster)
                metric.add_dimension(name="Team", value=team.team)
