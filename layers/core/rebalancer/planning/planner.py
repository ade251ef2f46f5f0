"""Snapshot + planning context + policy → Plan: the pools the engine allocates, and the ordered API requests that
get there.

Pure (no boto3, no clock: `now` is a parameter). Other parts (simulator, backtest, Lambdas, CLI) call `make_plan`
with the context `rebalancer.planning.context.planning_context` builds.
By responsibility: `rebalancer.engine.stability` makes the one effective policy every stage reads (budget caps from
the context's budget use, ownership) and holds the amounts (cooldown, min_step, protection, shrink tiers,
max_move), `pools` reads the snapshot and the context into the engine's input, `rebalancer.engine.allocation` (the
engine) decides the amounts, `requests` writes them and the policy's settings as ordered quota requests, `approval`
applies the approval rules; this module assembles the Plan (the validated model that is stored and sent).
"""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime
from typing import NamedTuple

from pydantic import TypeAdapter

from rebalancer.domain.context import PlanningContext
from rebalancer.domain.plan import CLUSTER, Change, Plan, SchedulerRequest
from rebalancer.domain.policy import Policy
from rebalancer.domain.pools import PoolKey, held, holdings
from rebalancer.domain.snapshot import Snapshot
from rebalancer.engine import stability
from rebalancer.engine.allocation import EPS, Allocation, allocate
from rebalancer.engine.reservations import shortfalls
from rebalancer.planning.approval import approval_reasons
from rebalancer.planning.capacity import topology_warnings
from rebalancer.planning.cluster_policy import plan_scheduler_config
from rebalancer.planning.context import planning_context
from rebalancer.planning.pools import build_pools, pool_inputs, split_family
from rebalancer.planning.requests import Move, edited_outside, quota_requests, setting_changes

__all__ = ["build_pools", "edited_outside", "held", "holdings", "make_plan", "setting_changes", "split_family"]

Allocations = dict[str, dict[str, dict[str, float]]]  # Plan.allocations: team → pool → resource → amount
# Validating the ~11k changes of a large plan in one call is about a third cheaper than one Change(...) each.
_CHANGES: TypeAdapter[list[Change]] = TypeAdapter(list[Change])


def make_plan(snapshot: Snapshot, policy: Policy, now: datetime, *, context: PlanningContext | None = None) -> Plan:
    """Desired allocations and settings against the snapshot's quotas and scheduler config, as an ordered,
    explained change set.

    `context`: what the plan reads beyond the snapshot (`planning_context`; without one, that of the snapshot
    alone: no recorded versions, no budget use). A quota at another version than the context's known one was
    edited outside the rebalancer, and what the plan rewrites there is marked "console edit will be replaced".
    With no known versions, every setting that differs from the policy is marked so (it may be a console edit);
    allocation changes are then ordinary rebalancing.
    """
    if context is None:
        context = planning_context(snapshot, policy)
    effective = stability.effective(policy, snapshot, context)  # budget caps and ownership, once for every stage
    plan = stability.explain(_make_plan(snapshot, effective, now, context), effective)
    short = shortfalls(plan.allocations, context.reservations) if context.reservations else []
    return plan.model_copy(update={"warnings": (*plan.warnings, *short)}) if short else plan


def _make_plan(snapshot: Snapshot, effective: stability.Effective, now: datetime, context: PlanningContext) -> Plan:
    policy = effective.policy
    known_versions = context.known_versions
    pools, pool_warnings = pool_inputs(snapshot, policy, now, context)
    # Collect's missing prerequisites (rebalancer.adapters.prerequisites) first, then the policy rules' warnings.
    governance = snapshot.governance
    warnings = [*((*governance.problems, *governance.advisories) if governance is not None else ()),
                *effective.opening, *pool_warnings]
    result = allocate(pools, stability.settings_of(policy))
    warnings.extend(result.warnings)
    outcome = _Outcome.of(result)
    written = quota_requests(snapshot, policy, outcome.moves, known_versions)
    warnings.extend(written.warnings)
    allocations, changes = outcome.planned(result, written.blocked)
    fields = written.fields
    scheduler: list[SchedulerRequest] = []
    if policy.cluster is not None and policy.cluster.manages_scheduler_config:
        request, cluster_fields = plan_scheduler_config(
            snapshot.cluster.ClusterName, snapshot.cluster.ClusterArn, snapshot.scheduler_config, policy.cluster,
            known_version=None if known_versions is None else known_versions.get(CLUSTER))
        scheduler += [request] if request else []
        fields = cluster_fields + fields
    if snapshot.topology_pending:
        warnings.extend(topology_warnings(snapshot, {c.team for c in changes if c.after > c.before}))
    approval = approval_reasons(policy, changes, fields)
    # Every field is a validated model (changes, requests, field changes from their constructors; the snapshot's
    # and policy's own fields) or built here with the declared types (allocations: floats from the engine), so
    # the plan is not validated a second time (15k allocation amounts, ~10 ms at 1,000 teams). Reading a stored
    # plan validates it as usual; tests check that a plan validates back to itself.
    return Plan.model_construct(
        cluster_name=snapshot.cluster.ClusterName, cluster_arn=snapshot.cluster.ClusterArn,
        taken_at=snapshot.taken_at, mode=policy.mode, allocations=allocations, changes=tuple(changes),
        requests=written.requests, requires_approval=bool(approval), approval_reasons=tuple(approval),
        warnings=tuple(warnings), field_changes=tuple(fields), scheduler_requests=tuple(scheduler),
    )


class _Outcome(NamedTuple):
    """What the engine's result means for the plan, read in one pass over its 15k claims (at 1,000 teams × 15
    types): per team the amounts that move (for the requests), what every team holds once the plan is applied, and
    the changes, decreases first, then by team, instance type and MIG profile."""

    moves: dict[str, list[Move]]  # per team, in the engine's pool order
    allocations: Allocations
    downs: dict[str, list[dict[str, object]]]  # per team, Change fields in (type, profile) order
    ups: dict[str, list[dict[str, object]]]

    @classmethod
    def of(cls, result: Allocation, blocked: frozenset[str] = frozenset()) -> _Outcome:
        """A blocked team's increases are not written, so they are not planned either."""
        allocations: Allocations = {}
        moves: dict[str, list[Move]] = defaultdict(list)
        downs: dict[str, list[dict[str, object]]] = defaultdict(list)
        ups: dict[str, list[dict[str, object]]] = defaultdict(list)
        # Pools visited in (type, profile) order: each team's lists come out sorted, only team names need sorting.
        keyed = sorted(((PoolKey.parse(pool.key), pool) for pool in result.pools),
                       key=lambda kp: (kp[0].instance_type, kp[0].mig_profile or ""))
        # Equal amounts of one resource share one {resource: amount} dict (the plan is immutable): 15k of them at
        # 1,000 teams × 15 types would be as many objects for the garbage collector.
        cells: dict[str, dict[int, dict[str, float]]] = defaultdict(dict)
        for key, pool in keyed:
            name, resource, instance_type, profile = pool.key, pool.resource, key.instance_type, key.mig_profile
            amounts = cells[resource]
            for team, before, planned, reason in zip(pool.teams, pool.before, pool.after, pool.reasons, strict=True):
                after = int(before) if blocked and planned > before and team in blocked else planned
                if after or before:
                    held = allocations.get(team)
                    if held is None:
                        held = allocations[team] = {}
                    cell = amounts.get(after)
                    if cell is None:
                        cell = amounts[after] = {resource: float(after)}
                    held[name] = cell
                moved = abs(planned - before) > EPS
                if moved:
                    moves[team].append((name, before, planned))
                if moved if after == planned else abs(after - before) > EPS:
                    (ups if after > before else downs)[team].append({
                        "team": team, "instance_type": instance_type, "resource": resource, "mig_profile": profile,
                        "before": before, "after": float(after), "reason": reason})
        if [pool for _, pool in keyed] != list(result.pools):  # a type name that sorts oddly around its MIG pools
            rank = {pool.key: i for i, pool in enumerate(result.pools)}
            for team_moves in moves.values():
                team_moves.sort(key=lambda m: rank[m[0]])
        return cls(moves, allocations, downs, ups)

    def planned(self, result: Allocation, blocked: set[str]) -> tuple[Allocations, list[Change]]:
        """The allocations and changes, with the increases of `blocked` teams left out (rare: a quota that would
        need more than 15 resource entries)."""
        outcome = _Outcome.of(result, frozenset(blocked)) if blocked else self
        rows = [c for side in (outcome.downs, outcome.ups) for team in sorted(side) for c in side[team]]
        return outcome.allocations, _CHANGES.validate_python(rows)
