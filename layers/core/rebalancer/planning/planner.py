"""Snapshot + planning context + policy → Plan: the pools the engine allocates, and the ordered API requests that
get there.

Pure (no boto3, no clock: `now` is a parameter). Other parts (simulator, backtest, Lambdas, CLI) call `make_plan`
with the context `rebalancer.planning.context.planning_context` builds.
By responsibility: `rebalancer.engine.stability` makes the one effective policy every stage reads (budget caps from
the context's budget use, ownership) and holds the amounts (cooldown, min_step, protection, shrink tiers,
max_move), `pools` reads the snapshot and the context into the engine's input, `rebalancer.engine.allocation` (the
engine) decides the amounts, `requests` writes them and the policy's settings as ordered quota requests, `approval`
applies the approval rules; this module assembles the Plan (the validated model that is stored and sent): the
changes, and what the policy wants that a hold keeps back (`Plan.held`), each with the reason
rebalancer.engine.reasons writes from the row's figures. When a policy rule holds a team (a budget), what the team
wants is what the pools would give it without that rule (`_unheld_wants`, planned only then).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

from pydantic import TypeAdapter

from rebalancer.domain.context import PlanningContext
from rebalancer.domain.plan import CLUSTER, Change, Hold, Plan, SchedulerRequest
from rebalancer.domain.policy import Policy
from rebalancer.domain.pools import PoolKey, held, holdings
from rebalancer.domain.snapshot import Snapshot
from rebalancer.engine import reasons, stability
from rebalancer.engine.allocation import EPS, Allocation, PoolResult, allocate
from rebalancer.engine.reservations import shortfalls
from rebalancer.parsing.text import bounded_lines
from rebalancer.planning.approval import approval_reasons
from rebalancer.planning.capacity import topology_warnings
from rebalancer.planning.cluster_policy import plan_scheduler_config
from rebalancer.planning.commitments import commitment_warnings
from rebalancer.planning.context import planning_context
from rebalancer.planning.pools import build_pools, pool_inputs, split_family
from rebalancer.planning.preemptions import listed, preemptions
from rebalancer.planning.requests import MAX_ENTRIES, Move, edited_outside, quota_requests, setting_changes
from rebalancer.planning.team_names import check_team_names

__all__ = ["build_pools", "edited_outside", "held", "holdings", "make_plan", "setting_changes", "split_family"]

Allocations = dict[str, dict[str, dict[str, float]]]  # Plan.allocations: team → pool → resource → amount
# A plan's warnings go into its record, every message and the approval page: each once, cut, at most this many (the
# last counting the rest), however many teams or pools one cause touches.
WARNINGS_MAX = 50
WARNING_MAX_BYTES = 1024
# Validating the ~11k changes of a large plan in one call is about a third cheaper than one Change(...) each.
_CHANGES: TypeAdapter[list[Change]] = TypeAdapter(list[Change])


def make_plan(snapshot: Snapshot, policy: Policy, now: datetime, *, context: PlanningContext | None = None,
              check_names: bool = True, preemptions_named: bool = True) -> Plan:
    """Desired allocations and settings against the snapshot's quotas and scheduler config, as an ordered,
    explained change set, with what the policy wants and a hold keeps back.

    `context`: what the plan reads beyond the snapshot (`planning_context`; without one, that of the snapshot
    alone: no recorded versions, no budget use). A quota at another version than the context's known one was
    edited outside the rebalancer, and what the plan rewrites there is marked "console edit will be replaced".
    With no known versions, every setting that differs from the policy is marked so (it may be a console edit);
    allocation changes are then ordinary rebalancing.

    A policy team without a quota whose name is close to an existing team's is refused (InvalidInput, "did you
    mean …?": rebalancer.planning.team_names) unless the policy marks it new; `check_names` False: checked already
    against these teams (a forecast's re-plans of the run's plan).

    `preemptions_named`: the running workloads its writes would make Kueue preempt are named
    (rebalancer.planning.preemptions); False for the forecast's own re-plans, which need only the quotas (and
    whose snapshot does not list what runs in the forecast).
    """
    if check_names:
        check_team_names(policy, (q.team for q in snapshot.quotas))
    if context is None:
        context = planning_context(snapshot, policy)
    effective = stability.effective(policy, snapshot, context)  # budget caps and ownership, once for every stage
    wanted = _unheld_wants(snapshot, policy, now, context, effective) if effective.held else {}
    plan = stability.explain(_make_plan(snapshot, effective, now, context, wanted, preemptions_named), effective)
    short = shortfalls(plan.allocations, context.reservations) if context.reservations else []
    promised = commitment_warnings(snapshot, policy, context.reservations,
                                   unavailable_since=context.unavailable_since)
    warnings = bounded_lines((*plan.warnings, *short, *promised), limit=WARNINGS_MAX, line_bytes=WARNING_MAX_BYTES,
                             rest="… and {n} more warnings")
    return plan.model_copy(update={"warnings": tuple(warnings)}) if warnings != list(plan.warnings) else plan


Wants = dict[tuple[str, str], tuple[int, str]]  # (team, pool) → what it wants and its "wants W because …" clause


def _unheld_wants(snapshot: Snapshot, policy: Policy, now: datetime, context: PlanningContext,
                  effective: stability.Effective) -> Wants:
    """What the teams a policy rule holds (a budget) want without that hold: the same pools under the policy
    without the rule. Computed only when a rule holds a team."""
    unheld = stability.unheld(policy, snapshot, context)
    pools, _ = pool_inputs(snapshot, unheld.policy, now, context)
    out: Wants = {}
    for pool in allocate(pools, stability.settings_of(unheld.policy)).pools:
        for i, team in enumerate(pool.teams):
            if team in effective.held:
                out[team, pool.key] = (pool.desired[i], pool.wants_of(i))
    return out


def _make_plan(snapshot: Snapshot, effective: stability.Effective, now: datetime, context: PlanningContext,
               wanted: Wants, preemptions_named: bool = True) -> Plan:
    policy = effective.policy
    known_versions = context.known_versions
    pools, pool_warnings = pool_inputs(snapshot, policy, now, context)
    # Collect's missing prerequisites (rebalancer.adapters.prerequisites) first, then the policy rules' warnings.
    governance = snapshot.governance
    warnings = [*((*governance.problems, *governance.advisories) if governance is not None else ()),
                *effective.opening, *pool_warnings]
    result = allocate(pools, stability.settings_of(policy))
    warnings.extend(result.warnings)
    explained = _Explained(effective.notes, effective.held, wanted, effective.unheld_notes)
    outcome = _Outcome.of(result, explained)
    written = quota_requests(snapshot, policy, outcome.moves, known_versions)
    warnings.extend(written.warnings)
    allocations, changes, held = outcome.planned(result, written.blocked, explained)
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
    created = [r.team for r in written.requests if r.operation == "CreateComputeQuota"]
    found, at_risk = preemptions(snapshot, allocations, changes) if preemptions_named else ([], 0.0)
    approval = approval_reasons(policy, changes, fields, created, preempted=len(found), preempted_gpu_hours=at_risk)
    preempting, unlisted = listed(found)
    # Every field is a validated model (changes, requests, field changes from their constructors; the snapshot's
    # and policy's own fields) or built here with the declared types (allocations: floats from the engine), so
    # the plan is not validated a second time (15,000 allocation amounts at 1,000 teams). Reading a stored
    # plan validates it as usual; tests check that a plan validates back to itself.
    return Plan.model_construct(
        cluster_name=snapshot.cluster.ClusterName, cluster_arn=snapshot.cluster.ClusterArn,
        taken_at=snapshot.taken_at, mode=policy.mode, allocations=allocations, changes=tuple(changes),
        held=tuple(held), requests=written.requests, requires_approval=bool(approval),
        approval_reasons=tuple(approval), warnings=tuple(warnings), field_changes=tuple(fields),
        scheduler_requests=tuple(scheduler), preemptions=preempting, preemptions_unlisted=unlisted,
        preempted_gpu_hours=at_risk,
    )


BLOCKED = Hold(rule="entries", text=f"its quota would need more than {MAX_ENTRIES} resource entries")


@dataclass(frozen=True, slots=True)
class _Explained:
    """What the reasons add to the engine's: the policy rules' notes per team (facts), their holds, and what the
    teams they hold want without them."""

    notes: Mapping[str, str]
    held: Mapping[str, Hold]
    wanted: Wants
    unheld_notes: Mapping[str, str]  # a held team's notes but its hold's, for the changes that hold holds

    def row(self, pool: PoolResult, i: int, after: int, planned: int, desired: int,
            hold: Hold | None) -> dict[str, object] | None:
        """Claim i's row of the plan (Change fields but where it is): a change, or what a hold keeps back with
        what is wanted; None when it keeps its amount and is wanted to. `after` is `planned` unless its team's
        increases cannot be written (BLOCKED)."""
        team, before, reason = pool.teams[i], pool.before[i], pool.reasons[i]
        wants = self.wanted.get((team, pool.key)) if self.wanted else None
        clause = pool.wants[i] if pool.wants else ""
        note = self.notes.get(team, "")
        if after != planned:
            hold = BLOCKED
        elif wants is not None and hold is None and wants[0] != after:
            desired, clause, hold = wants[0], wants[1], self.held[team]
            note = self.unheld_notes[team]
        elif wants is not None and not reason:
            return None
        if after == before and desired == before:
            return None
        if hold is not BLOCKED and wants is None and team not in self.notes:
            said = reason
        else:
            said = reasons.reason(clause or pool.wants_of(i), after, desired, hold, (*pool.facts(i), note))
        row: dict[str, object] = {"before": before, "after": float(after), "reason": said}
        if desired != after:
            row["wanted"] = float(desired)
            row["hold"] = hold
        return row


@dataclass(frozen=True, slots=True)
class _Outcome:
    """What the engine's result means for the plan, read in one pass over its 15k claims (at 1,000 teams × 15
    types): per team the amounts that move (for the requests), what every team holds once the plan is applied, and
    the changes, decreases first, then by team, instance type and MIG profile, and the changes held back."""

    moves: dict[str, list[Move]]  # per team, in the engine's pool order
    allocations: Allocations
    downs: dict[str, list[dict[str, object]]]  # per team, Change fields in (type, profile) order
    ups: dict[str, list[dict[str, object]]]
    held: dict[str, list[dict[str, object]]]

    @classmethod
    def of(cls, result: Allocation, explained: _Explained, blocked: frozenset[str] = frozenset()) -> _Outcome:
        """A blocked team's increases are not written, so they are not planned either: held back."""
        allocations: Allocations = {}
        moves: dict[str, list[Move]] = defaultdict(list)
        downs: dict[str, list[dict[str, object]]] = defaultdict(list)
        ups: dict[str, list[dict[str, object]]] = defaultdict(list)
        held_back: dict[str, list[dict[str, object]]] = defaultdict(list)
        # Pools visited in (type, profile) order: each team's lists come out sorted, only team names need sorting.
        keyed = sorted(((PoolKey.parse(pool.key), pool) for pool in result.pools),
                       key=lambda kp: (kp[0].instance_type, kp[0].mig_profile or ""))
        # Equal amounts of one resource share one {resource: amount} dict (the plan is immutable): 15k of them at
        # 1,000 teams × 15 types would be as many objects for the garbage collector.
        cells: dict[str, dict[int, dict[str, float]]] = defaultdict(dict)
        for key, pool in keyed:
            name, resource, instance_type, profile = pool.key, pool.resource, key.instance_type, key.mig_profile
            amounts = cells[resource]
            for i, (team, before, planned, desired, hold, reason) in enumerate(zip(
                    pool.teams, pool.before, pool.after, pool.desired, pool.holds, pool.reasons, strict=True)):
                after = int(before) if blocked and planned > before and team in blocked else planned
                if after or before:
                    kept = allocations.get(team)
                    if kept is None:
                        kept = allocations[team] = {}
                    cell = amounts.get(after)
                    if cell is None:
                        cell = amounts[after] = {resource: float(after)}
                    kept[name] = cell
                moved = abs(planned - before) > EPS
                if moved:
                    moves[team].append((name, before, planned))
                if not reason and (team, name) not in explained.wanted:
                    continue  # most claims: nothing moves, nothing is held
                row = explained.row(pool, i, after, planned, desired, hold)
                if row is not None:
                    row.update(team=team, instance_type=instance_type, resource=resource, mig_profile=profile)
                    (held_back if after == before else ups if after > before else downs)[team].append(row)
        if [pool for _, pool in keyed] != list(result.pools):  # a type name that sorts oddly around its MIG pools
            rank = {pool.key: i for i, pool in enumerate(result.pools)}
            for team_moves in moves.values():
                team_moves.sort(key=lambda m: rank[m[0]])
        return cls(moves, allocations, downs, ups, held_back)

    def planned(self, result: Allocation, blocked: set[str],
                explained: _Explained) -> tuple[Allocations, list[Change], list[Change]]:
        """The allocations, the changes and the changes held back, with the increases of `blocked` teams held
        back (rare: a quota that would need more than 15 resource entries)."""
        outcome = _Outcome.of(result, explained, frozenset(blocked)) if blocked else self
        rows = [c for side in (outcome.downs, outcome.ups) for team in sorted(side) for c in side[team]]
        kept = [c for team in sorted(outcome.held) for c in outcome.held[team]]
        return outcome.allocations, _CHANGES.validate_python(rows), _CHANGES.validate_python(kept)
