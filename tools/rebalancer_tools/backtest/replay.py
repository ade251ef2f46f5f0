"""One policy replayed over a recorded history with the production planner (`rebalancer.planning.planner.make_plan`).

At every recorded state the planner runs on that state's capacity and demand and on the quotas the policy's own
earlier plans left (every plan is taken as applied at once; one that needs approval is counted, and taken as
approved). The first quotas are the ones recorded at the first state.

What is measured, on accelerator pools only (vCPU and MIG pools are planned, not scored), each state weighted by
the time until the next one (a gap, longer than GAP_FACTOR typical intervals, counts one typical interval):
- demand met: min(demand, quota), what a team can run inside its quota (borrowing left out);
- entitlement: the weighted max-min fair share of the pool's capacity by demand (simulator.metrics.entitlements),
  with the reference weights (the first policy's, so that every policy is judged by one yardstick);
- deficit: entitlement not met; idle guaranteed: quota above what the team runs;
- churn: a change of a team's quota in a pool in the direction opposite to its previous change, within an hour.

Speed: the planner is a pure function of the snapshot, the policy and which teams are cooling down, so a state that
repeats the previous one (same demand and capacity, quotas untouched by the previous plan, same teams cooling)
reuses the previous plan instead of planning again (`Replay.planned` counts the real calls).
"""

from __future__ import annotations

import itertools
import math
import statistics
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from rebalancer.catalog import specs as catalog
from rebalancer.domain.context import PlanningContext
from rebalancer.domain.plan import Plan
from rebalancer.domain.policy import Policy
from rebalancer.domain.pools import PoolKey, holdings
from rebalancer.domain.quotas import ComputeQuota, ComputeQuotaResource
from rebalancer.domain.sample import DemandSample
from rebalancer.domain.snapshot import Cluster, ClusterNode, Demand, InstanceGroup, NodeStatus, Resources, Snapshot
from rebalancer.planning.context import planning_context
from rebalancer.planning.planner import make_plan
from rebalancer_tools.simulator.budget_meter import BudgetMeter
from rebalancer_tools.simulator.metrics import (
    MIN_WINDOW_ENTITLED_H,
    WEEK_S,
    FairnessWindows,
    entitlements,
    fairness_windows,
)

CHURN_WINDOW = timedelta(hours=1)
# Budgets are metered from the recorded states as collect meters them and planned with as the plan step does; what
# the replay cannot know, said in its report:
NOT_REPLAYED = ("use before the first recorded state of a period (the ledger starts empty there)",
                "work that would have run differently under the replayed quotas: use is what the history recorded, "
                "split into own and borrowed by the replayed quotas",
                "budget notifications (thresholds, period summaries)")
GAP_FACTOR = 3
EPS = 1e-9


@dataclass(frozen=True, slots=True)
class Move:
    """One change of one team's quota in one accelerator pool."""

    at: datetime
    team: str
    pool: str
    before: float
    after: float


@dataclass(frozen=True, slots=True)
class Reversal:
    team: str
    pool: str
    at: datetime
    minutes: float  # since the change it reverses
    size: float  # of the reversing change


@dataclass(slots=True)
class TeamTotals:
    demand_hours: float = 0.0
    met_hours: float = 0.0
    entitled_hours: float = 0.0
    deficit_hours: float = 0.0
    idle_guaranteed_hours: float = 0.0


@dataclass(slots=True)
class Replay:
    """What one policy would have done, and the timelines it leaves (accelerators summed over pools)."""

    name: str
    times: list[datetime] = field(default_factory=list)
    quota: dict[str, list[float]] = field(default_factory=dict)  # team → per state, after that state's plan
    # team → per state → pool → quota: what the figures draw (a pool of H100s and one of Trainium do not add up)
    pool_quota: dict[str, list[dict[str, float]]] = field(default_factory=dict)
    runs_changed: int = 0
    approvals: int = 0
    moved: float = 0.0
    planned: int = 0  # real make_plan calls (the others repeated an unchanged state)
    plan_moves: list[float] = field(default_factory=list)  # accelerators moved by each plan that moved some
    decrease_percents: list[float] = field(default_factory=list)  # of every decrease, of what the team held
    moves: list[Move] = field(default_factory=list)
    reversals: list[Reversal] = field(default_factory=list)
    teams: dict[str, TeamTotals] = field(default_factory=lambda: defaultdict(TeamTotals))
    hours: float = 0.0
    gaps: int = 0
    warnings: set[str] = field(default_factory=set)
    budgets: dict[str, dict[str, dict[str, float]]] = field(default_factory=dict)  # team → period → hours, %
    start: datetime | None = None
    # team → week since the first state → [met, entitled] accelerator-hours
    weeks: dict[str, dict[int, list[float]]] = field(default_factory=lambda: defaultdict(dict))
    # hour since the first state → [deficit, guaranteed-but-idle accelerator-hours, reversals]: the objective per
    # hour, so that two policies' difference can be told from the history's own hour-to-hour variation
    hourly: dict[int, list[float]] = field(default_factory=dict)

    def hour(self, at: datetime) -> list[float]:
        start = self.start or at
        return self.hourly.setdefault(int((at - start).total_seconds() // 3600), [0.0, 0.0, 0.0])

    def total(self, name: str) -> float:
        return float(sum(getattr(t, name) for t in self.teams.values()))

    def team_weeks(self) -> dict[str, list[float]]:
        """Per team, met ÷ entitled of each week in which it was entitled to a share worth counting."""
        return {t: [m / e for _, (m, e) in sorted(w.items()) if e >= MIN_WINDOW_ENTITLED_H]
                for t, w in self.weeks.items()}

    def fairness(self) -> FairnessWindows:
        return fairness_windows(list(self.team_weeks().values()))

    def summary(self) -> dict[str, Any]:
        demand, met = self.total("demand_hours"), self.total("met_hours")
        return {
            "policy": self.name,
            "states": len(self.times),
            "hours": round(self.hours, 2),
            "gaps": self.gaps,
            "runs_changed": self.runs_changed,
            "approvals": self.approvals,
            "accelerators_moved": round(self.moved, 2),
            "demand_met_percent": round(100 * met / demand, 2) if demand else 100.0,
            "deficit_accelerator_hours": round(self.total("deficit_hours"), 2),
            "idle_guaranteed_accelerator_hours": round(self.total("idle_guaranteed_hours"), 2),
            "reversals_within_hour": len(self.reversals),
            "planner_calls": self.planned,
            "fairness_windows": self.fairness().output(),
            **({"budgets": self.budgets, "budgets_not_replayed": NOT_REPLAYED} if self.budgets else {}),
        }


# --- the recorded states, prepared once for every policy ---------------------------------------------------------
@dataclass(frozen=True, slots=True)
class State:
    at: datetime
    hours: float  # weight of the state in the metrics
    gap: bool  # the next state came after a gap
    same_as_previous: bool  # demand, capacity and MIG as in the state before
    cluster: Cluster
    nodes: tuple[ClusterNode, ...]
    demand: dict[str, dict[str, Demand]]
    mig: dict[str, dict[str, int]]
    # Accelerator pools only: capacity, and per team (demand rounded up as the planner does, in use).
    capacity: dict[str, float]
    use: dict[str, dict[str, tuple[float, float]]]


_NO_RESOURCES = {"accelerators": 0.0, "vcpu": 0.0, "memory_gib": 0.0, "partitions": 0.0}


def _resources(resource: str, amount: float) -> Resources:
    values = dict(_NO_RESOURCES)
    values[resource] = float(amount)
    return Resources(**values)


def _nodes(sample: DemandSample) -> tuple[Cluster, tuple[ClusterNode, ...]]:
    groups, nodes = [], []
    for g, (t, n) in enumerate(sorted(sample.nodes.items())):
        name = f"group-{g}"
        groups.append(InstanceGroup(InstanceGroupName=name, InstanceType=t, CurrentCount=n.healthy + n.unhealthy))
        running, failed = NodeStatus(Status="Running"), NodeStatus(Status="Failure")
        for k in range(n.healthy + n.unhealthy):
            nodes.append(ClusterNode(InstanceGroupName=name, InstanceId=f"i-{g:03d}{k:06d}", InstanceType=t,
                                     InstanceStatus=running if k < n.healthy else failed))
    cluster = Cluster(ClusterName=sample.cluster, ClusterArn=sample.cluster_arn, InstanceGroups=tuple(groups))
    return cluster, tuple(nodes)


def _capacity(sample: DemandSample) -> dict[str, float]:
    out = {}
    for t, n in sample.nodes.items():
        spec = catalog.spec(t)
        if spec.primary_resource != "accelerators":
            continue
        carved = sum(math.ceil(k / catalog.mig_partitions_per_gpu(p)) for p, k in sample.mig.get(t, {}).items())
        out[t] = float(max(0, n.healthy * spec.accelerators - carved))
    return out


def prepare(samples: Sequence[DemandSample]) -> list[State]:
    """The states a replay walks, built once (snapshot parts, weights) and shared by every policy."""
    if not samples:
        return []
    intervals = [(b.at - a.at).total_seconds() / 3600 for a, b in itertools.pairwise(samples)]
    typical = statistics.median([i for i in intervals if i > 0] or [5 / 60])
    out: list[State] = []
    previous: DemandSample | None = None
    cluster, nodes = _nodes(samples[0])
    resources: dict[str, str] = {}
    made_demand: dict[tuple[str, float, float], Demand] = {}
    for i, s in enumerate(samples):
        same = previous is not None and s.teams == previous.teams and s.nodes == previous.nodes \
            and s.mig == previous.mig
        if previous is not None and (s.nodes != previous.nodes or s.cluster_arn != previous.cluster_arn):
            cluster, nodes = _nodes(s)
        step = intervals[i] if i < len(intervals) else typical
        gap = step > GAP_FACTOR * typical
        demand: dict[str, dict[str, Demand]] = {}
        use: dict[str, dict[str, tuple[float, float]]] = {}
        for team, pools in s.teams.items():
            d: dict[str, Demand] = {}
            for pool, u in pools.items():
                resource = resources.get(pool)
                if resource is None:
                    resource = resources[pool] = PoolKey.parse(pool).resource
                if u.in_use or u.pending:
                    key = (resource, u.in_use, u.pending)
                    made = made_demand.get(key)
                    if made is None:  # amounts repeat across teams and states: one frozen Demand each
                        made = made_demand[key] = Demand(in_use=_resources(resource, u.in_use),
                                                         pending=_resources(resource, u.pending))
                    d[pool] = made
                if resource == "accelerators":
                    use.setdefault(team, {})[pool] = (float(math.ceil(u.in_use + u.pending - EPS)), u.in_use)
            if d:
                demand[team] = d
        out.append(State(at=s.at, hours=typical if gap else step, gap=gap, same_as_previous=same, cluster=cluster,
                         nodes=nodes, demand=demand, mig=s.mig, capacity=_capacity(s), use=use))
        previous = s
    return out


def initial_quotas(first: DemandSample, like: Sequence[ComputeQuota] = ()) -> dict[str, ComputeQuota]:
    """The quotas recorded at the first state, as the API would describe them: a team's quota in `like` (a run's
    snapshot) gives its id, sharing, preemption and weight, the sample its amounts; other teams get the sharing the
    planner creates quotas with."""
    known = {q.team: q for q in like}
    out = {}
    for i, (team, pools) in enumerate(sorted(first.teams.items())):
        entries: list[dict[str, Any]] = []
        for pool, u in sorted(pools.items()):
            if u.quota <= 0:
                continue
            t, _, profile = pool.partition(":")
            if profile:
                entries.append({"InstanceType": t, "AcceleratorPartition": {"Type": profile, "Count": int(u.quota)}})
            elif catalog.spec(t).accelerators:
                entries.append({"InstanceType": t, "Accelerators": int(u.quota)})
            else:
                entries.append({"InstanceType": t, "VCpu": float(u.quota)})
        if entries and team in known:
            q = known[team]
            config = q.ComputeQuotaConfig.model_copy(update={
                "ComputeQuotaResources": tuple(ComputeQuotaResource.model_validate(e) for e in entries)})
            out[team] = q.model_copy(update={"ComputeQuotaConfig": config, "ComputeQuotaVersion": 1,
                                             "ActivationState": "Enabled", "LastModifiedTime": None})
        elif entries:
            out[team] = ComputeQuota.model_validate({
                "ComputeQuotaId": f"bt-{i:04d}", "Name": f"{team}-quota", "ComputeQuotaVersion": 1,
                "Status": "Created", "ClusterArn": first.cluster_arn, "ActivationState": "Enabled",
                "ComputeQuotaTarget": {"TeamName": team},
                "ComputeQuotaConfig": {"ComputeQuotaResources": entries,
                                       "ResourceSharingConfig": {"Strategy": "LendAndBorrow", "BorrowLimit": 50}}})
    return out


def _apply(plan: Plan, quotas: dict[str, ComputeQuota], now: datetime) -> None:
    """The plan's requests as the API would take them: new config, version + 1, modified now."""
    for r in plan.requests:
        p = r.parameters
        q = quotas.get(r.team)
        if r.operation == "CreateComputeQuota" or q is None:
            quotas[r.team] = ComputeQuota.model_validate({
                **p, "ComputeQuotaId": f"bt-new-{r.team}", "ComputeQuotaVersion": 1, "Status": "Created",
                "CreationTime": now, "LastModifiedTime": now})
            continue
        quotas[r.team] = q.updated(p, ComputeQuotaVersion=q.ComputeQuotaVersion + 1, LastModifiedTime=now)


def replay_policy(policy: Policy) -> Policy:
    """The policy as replayed: a dry run plans as auto (a backtest writes nothing anyway); the scheduler config is
    not replayed (the samples do not record it). Budgets are replayed (see NOT_REPLAYED for what of them is not)."""
    return policy.model_copy(update={"mode": "auto" if policy.mode == "dry-run" else policy.mode, "cluster": None})


def _held(plan: Plan, team: str, pool: str) -> float:
    return plan.allocations.get(team, {}).get(pool, {}).get("accelerators", 0.0)


def replay(name: str, states: Sequence[State], policy: Policy, first: DemandSample,
           reference_weights: Mapping[str, float] | None = None, *, reuse: bool = True,
           like: Sequence[ComputeQuota] = ()) -> Replay:
    """`like`: the quotas of a recorded run, for their settings (see initial_quotas). `reuse=False` plans at every
    state (the tests check that reusing a repeated state's plan changes nothing)."""
    out = Replay(name=name)
    if not states:
        return out
    policy = replay_policy(policy)
    weights = dict(reference_weights) if reference_weights is not None else \
        {t: tp.weight for t, tp in policy.teams.items()}
    quotas = initial_quotas(first, like)
    cooldown = timedelta(minutes=policy.stability.cooldown_minutes)
    teams = sorted(set(policy.teams) | set(quotas) | {t for s in states for t in s.use})
    for t in teams:
        out.quota[t] = []
        out.pool_quota[t] = []
    last: dict[tuple[str, str], tuple[datetime, int]] = {}
    previous_plan: Plan | None = None
    previous_held: tuple[frozenset[str], frozenset[str]] = (frozenset(), frozenset())
    touched = True  # the quotas changed since the previous plan
    allocations: dict[str, dict[str, float]] = {}
    meter = BudgetMeter(policy)
    for state in states:
        now = state.at
        cooling = _cooling(quotas, now, cooldown)
        snapshot = _snapshot(state, quotas)
        # With budgets or a fair-share window every state is metered, as every collect is: what the teams ran, own
        # or borrowed under the replayed quotas; which teams have used theirs up is then part of what makes a state
        # repeat the previous. Weights that follow use over a window move with every state: nothing repeats.
        context = _context(snapshot, policy, meter) if meter.active else None
        held = (cooling, meter.exhausted(context.budget_usage) if context is not None else frozenset())
        repeated = state.same_as_previous and not touched and held == previous_held and meter.trailing is None
        if reuse and previous_plan is not None and repeated:
            plan = previous_plan
        else:
            plan = make_plan(snapshot, policy, now,
                             context=context if context is not None else _context(snapshot, policy, None))
            out.planned += 1
            out.warnings.update(plan.warnings)
            allocations = _allocations(plan, state, quotas, policy, teams)
        touched = bool(plan.requests)
        previous_plan, previous_held = plan, held
        if plan.requests:
            _record(out, plan, now, last)
            _apply(plan, quotas, now)
        _score(out, state, allocations, weights, teams)
        out.times.append(now)
    out.budgets = meter.report()
    return out


def _cooling(quotas: Mapping[str, ComputeQuota], now: datetime, cooldown: timedelta) -> frozenset[str]:
    """The teams whose quota was written less than the cooldown ago."""
    return frozenset(t for t, q in quotas.items() if cooldown and q.LastModifiedTime is not None
                     and now - q.LastModifiedTime < cooldown)


def _allocations(plan: Plan, state: State, quotas: Mapping[str, ComputeQuota], policy: Policy,
                 teams: Sequence[str]) -> dict[str, dict[str, float]]:
    """What each team holds per pool of the state once the plan is applied: the policy's teams as planned, the
    others as their quotas stand."""
    return {t: {p: _held(plan, t, p) for p in state.capacity} if t in policy.teams
            else {p: v for p, v in holdings(quotas[t]).items() if p in state.capacity}
            for t in teams if t in policy.teams or t in quotas}


def _context(snapshot: Snapshot, policy: Policy, meter: BudgetMeter | None) -> PlanningContext:
    """Every quota's version is known: the replay wrote them all."""
    metered = meter.meter(snapshot) if meter is not None else None
    return planning_context(snapshot, policy, known_versions={q.team: q.ComputeQuotaVersion for q in snapshot.quotas},
                            metered=metered if meter is not None and meter.budgets else None,
                            trailing=meter.trailing if meter is not None else None)


def _snapshot(state: State, quotas: Mapping[str, ComputeQuota]) -> Snapshot:
    """The state as collect would have read it under the replayed quotas. Its parts are already validated;
    model_construct gives any field not named here its default."""
    return Snapshot.model_construct(taken_at=state.at, cluster=state.cluster, nodes=state.nodes,
                                    quotas=tuple(quotas[t] for t in sorted(quotas)), demand=state.demand,
                                    mig=state.mig)


def _record(out: Replay, plan: Plan, now: datetime, last: dict[tuple[str, str], tuple[datetime, int]]) -> None:
    out.runs_changed += 1
    out.approvals += plan.requires_approval
    moved = plan.moved("accelerators")
    out.moved += moved
    if moved:
        out.plan_moves.append(moved)
    for c in plan.changes:
        if c.resource != "accelerators":
            continue
        out.moves.append(Move(now, c.team, c.pool, c.before, c.after))
        if c.after < c.before and c.before > 0:
            out.decrease_percents.append(100 * (c.before - c.after) / c.before)
        sign = 1 if c.after > c.before else -1
        key = (c.team, c.pool)
        prior = last.get(key)
        if prior is not None and prior[1] == -sign and now - prior[0] < CHURN_WINDOW:
            out.reversals.append(Reversal(c.team, c.pool, now, (now - prior[0]).total_seconds() / 60,
                                          abs(c.after - c.before)))
            out.hour(now)[2] += 1
        last[key] = (now, sign)


def _score(out: Replay, state: State, allocations: dict[str, dict[str, float]], weights: Mapping[str, float],
           teams: Sequence[str]) -> None:
    h = state.hours
    out.hours += h
    out.start = out.start or state.at
    week = int((state.at - out.start).total_seconds() // WEEK_S)
    hour = out.hour(state.at)
    out.gaps += state.gap
    for pool, capacity in state.capacity.items():
        names = [t for t in teams if pool in state.use.get(t, {})]
        demands = [state.use[t][pool][0] for t in names]
        entitled = entitlements(capacity, [weights.get(t, 1.0) for t in names], demands)
        for t, d, e in zip(names, demands, entitled, strict=True):
            q = allocations.get(t, {}).get(pool, 0.0)
            met = min(d, q)
            totals = out.teams[t]
            totals.demand_hours += d * h
            totals.met_hours += met * h
            totals.entitled_hours += e * h
            totals.deficit_hours += max(0.0, e - met) * h
            hour[0] += max(0.0, e - met) * h
            this = out.weeks[t].setdefault(week, [0.0, 0.0])
            this[0] += met * h
            this[1] += e * h
        for t in teams:
            q = allocations.get(t, {}).get(pool, 0.0)
            if q:
                in_use = state.use.get(t, {}).get(pool, (0.0, 0.0))[1]
                out.teams[t].idle_guaranteed_hours += max(0.0, q - in_use) * h
                hour[1] += max(0.0, q - in_use) * h
    for t in teams:
        out.quota[t].append(sum(allocations.get(t, {}).values()))
        out.pool_quota[t].append(dict(allocations.get(t, {})))
