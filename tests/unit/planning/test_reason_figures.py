"""A change's reason states the row's own figures, and every change the policy wants is in the plan: on the golden
plans (benchmarks/plan_outputs.py) and on random clusters with cooldowns, min_step, max_move, protection, budgets
and lost nodes.

Each reason is read back: "wants W because …" then, when a hold keeps the team from W, "gets A because …", then
the facts of its pool and team. Every number of the two clauses is claimed by one labelled pattern (`demand 8`,
`8 running`, `share 9.6 of 32 by weight 3 of 10`, `cooldown until … (last changed 12 min ago, cooldown 30 min)`,
…) and must equal that figure of the row: W and A as the plan holds them, the demand and what runs as the snapshot
says, the share, weights, guarantee, cap and capacity as the engine computes them for the pool, the hold's
parameters as the policy and the context give them. A number no pattern claims fails the test."""

from __future__ import annotations

import math
import re
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from support.clock import T0
from support.clusters import snapshot
from support.props import properties

from rebalancer.domain.budget import BudgetUsage
from rebalancer.domain.context import PlanningContext
from rebalancer.domain.plan import Change, Plan
from rebalancer.domain.policy import Policy
from rebalancer.domain.pools import PoolKey, held
from rebalancer.domain.snapshot import Snapshot
from rebalancer.engine import stability
from rebalancer.engine.allocation import EPS, allocate
from rebalancer.planning.context import planning_context
from rebalancer.planning.planner import make_plan
from rebalancer.planning.pools import demand_of, pool_inputs
from rebalancer.planning.requests import MAX_ENTRIES

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))
import plan_bench
import plan_outputs

N = r"(-?[0-9]+(?:\.[0-9])?(?![0-9])|∞)"
WHEN = r"([A-Z][a-z]{2} [0-9]{2} [A-Z][a-z]{2} [0-9]{2}:[0-9]{2}) UTC"


@dataclass(frozen=True, slots=True)
class Figures:
    """One claim's figures as the engine computed them for its pool."""

    wanted: float
    share: float
    weight: float
    total: float
    guarantee: float
    scaled: float
    guaranteed: float  # the pool's guarantees, scaled
    cap: float
    capacity: float
    facts: tuple[str, ...]


def engine_figures(snap: Snapshot, policy: Policy, now: datetime,
                   context: PlanningContext) -> tuple[dict[tuple[str, str], Figures], stability.Effective]:
    """Per (team, pool): what the engine computed, recomputed here from the pools of the effective policy."""
    effective = stability.effective(policy, snap, context)
    return _figures(snap, effective, now, context), effective


def _figures(snap: Snapshot, effective: stability.Effective, now: datetime,
             context: PlanningContext) -> dict[tuple[str, str], Figures]:
    pools, _ = pool_inputs(snap, effective.policy, now, context)
    out = {}
    for r in allocate(pools, stability.settings_of(effective.policy)).pools:
        total = sum(r.weight)
        for i, team in enumerate(r.teams):
            out[team, r.key] = Figures(r.desired[i], r.share[i], r.weight[i], total, r.guarantee[i],
                                       r.guarantee[i] * r.factor, sum(r.guarantee) * r.factor, r.cap[i],
                                       math.floor(max(r.capacity, 0) + EPS), r.facts(i))
    return out


def same(text: str, value: float) -> bool:
    """A figure as a reason prints it (whole, or to one decimal) against the value it stands for."""
    if text == "∞":
        return value == math.inf
    return abs(float(text) - value) <= 0.05 + 1e-9


Check = Callable[[re.Match[str]], bool]


def claimed(clause: str, patterns: list[tuple[str, Check]]) -> list[str]:
    """Every pattern's matches are checked; returns what is wrong: a match whose figures are not the row's, and
    any number no pattern claims."""
    wrong = []
    covered = [False] * len(clause)
    for pattern, check in patterns:
        for m in re.finditer(pattern, clause):
            if not check(m):
                wrong.append(f"{m.group(0)!r} is not the row's")
            for k in range(m.start(), m.end()):
                covered[k] = True
    for m in re.finditer(r"[0-9]+", clause):
        if not all(covered[m.start():m.end()]):
            wrong.append(f"{m.group(0)} at {m.start()} is stated but is no figure of the row")
    return wrong


def check_plan(snap: Snapshot, policy: Policy, now: datetime, context: PlanningContext | None = None) -> Plan:
    context = context or planning_context(snap, policy)
    plan = make_plan(snap, policy, now, context=context)
    figures, effective = engine_figures(snap, policy, now, context)
    unheld = _figures(snap, stability.unheld(policy, snap, context), now, context) if effective.held else {}
    quotas = {q.team: q for q in snap.quotas if q.ActivationState != "Disabled"}
    rows = {(c.team, c.pool): c for c in (*plan.changes, *plan.held)}
    for c in (*plan.changes, *plan.held):
        problems = check_row(c, plan, snap, policy, now, context, effective, figures, unheld, quotas)
        assert not problems, (c.team, c.pool, c.before, c.after, c.wanted, c.reason, problems)
    # Nothing the policy wants is hidden: every amount the engine wants moved is a change or held back.
    for (team, pool), f in figures.items():
        q = quotas.get(team)
        before = held(q, PoolKey.parse(pool)) if q is not None else 0.0
        want = unheld[team, pool].wanted if team in effective.held else f.wanted
        if abs(want - before) > EPS:
            assert (team, pool) in rows, (team, pool, before, want)
    assert (plan.headline() == f"{plan.cluster_name}: no change needed") == (
        not rows and not plan.field_changes and not plan.scheduler_requests)
    return plan


def check_row(c: Change, plan: Plan, snap: Snapshot, policy: Policy, now: datetime, context: PlanningContext,
              effective: stability.Effective, figures: dict[tuple[str, str], Figures],
              unheld: dict[tuple[str, str], Figures], quotas: dict[str, Any]) -> list[str]:
    key = PoolKey.parse(c.pool)
    q = quotas.get(c.team)
    problems = []
    if abs(c.before - (held(q, key) if q is not None else 0.0)) > EPS:
        problems.append("before is not the quota's amount")
    if abs(c.after - plan.allocations.get(c.team, {}).get(c.pool, {}).get(c.resource, 0.0)) > EPS:
        problems.append("after is not the plan's allocation")
    if c in plan.held and not (c.after == c.before and c.wanted is not None and c.hold is not None):
        problems.append("a held row must keep its amount and say what is wanted and what holds it")
    wanted = c.wanted if c.wanted is not None else c.after
    budget_held = c.hold is not None and c.hold.rule == "budget"
    f = (unheld if budget_held else figures)[c.team, c.pool]
    if abs(wanted - f.wanted) > EPS:
        problems.append(f"wants {wanted:g} but the engine wants {f.wanted:g}")
    by_pool = snap.demand.get(c.team, {})
    demand = demand_of(by_pool, c.pool, c.resource)
    running = float(getattr(by_pool[c.pool].in_use, c.resource)) if c.pool in by_pool else 0.0

    facts = [x for x in f.facts if x]
    note = (effective.unheld_notes.get(c.team, "") if budget_held else effective.notes.get(c.team, ""))
    facts += [note] if note else []
    tail = "; ".join(facts)
    reason = c.reason
    if tail:
        if not reason.endswith("; " + tail):
            return [*problems, f"the facts {tail!r} do not close the reason"]
        reason = reason[:-len(tail) - 2]
    wants_clause, _, gets_clause = reason.partition("; gets ")
    gets_clause = "gets " + gets_clause if gets_clause else ""
    if not wants_clause.startswith("wants "):
        problems.append("the reason does not start with what is wanted")
    if bool(gets_clause) != (c.wanted is not None):
        problems.append("a gets clause exactly when the row gets other than what is wanted")

    problems += claimed(wants_clause, [
        (rf"^wants {N} because", lambda m: same(m[1], wanted)),
        (rf"demand {N}", lambda m: same(m[1], demand)),
        (rf"{N} running", lambda m: same(m[1], running)),
        (rf"share {N} of {N} by weight {N} of {N}",
         lambda m: same(m[1], f.share) and same(m[2], f.capacity) and same(m[3], f.weight) and same(m[4], f.total)),
        (rf"its share by weight {N} of {N} is less", lambda m: same(m[1], f.weight) and same(m[2], f.total)),
        (rf"guarantees take {N} of {N}", lambda m: same(m[1], f.guaranteed) and same(m[2], f.capacity)),
        (rf"surplus spread by weight {N} of {N}: share {N}",
         lambda m: same(m[1], f.weight) and same(m[2], f.total) and same(m[3], f.share)),
        (rf"guarantee {N}(?! scaled)", lambda m: same(m[1], f.guarantee)),
        (rf"guarantee {N} scaled to {N}", lambda m: same(m[1], f.guarantee) and same(m[2], f.scaled)),
        (rf"cap {N}", lambda m: same(m[1], f.cap)),
        (r"weight 0(?! of)", lambda _m: f.weight == 0),
    ])
    if gets_clause:
        problems += claimed(gets_clause, hold_patterns(c, snap, policy, now, context, running, f))
    return problems


def hold_patterns(c: Change, snap: Snapshot, policy: Policy, now: datetime, context: PlanningContext,
                  running: float, f: Figures) -> list[tuple[str, Check]]:
    last = context.last_changed.get(c.team)
    minutes = policy.stability.cooldown_minutes

    def cooldown(m: re.Match[str]) -> bool:
        if last is None:
            return False
        until = last + timedelta(minutes=minutes)
        return (m[1] == f"{until:%a %d %b %H:%M}" and same(m[3], minutes)
                and int(m[2]) == round(max((now - last).total_seconds(), 0) / 60))

    def budget(m: re.Match[str]) -> bool:
        team = policy.teams[c.team]
        used = context.budget_usage.get(c.team)
        if team.budget is None or used is None or team.budget.accelerator_hours is None:
            return False
        end = team.budget.window(snap.taken_at).end
        return (int(m[1]) == round(used.fraction(team.budget) * 100)
                and m[2].replace(",", "") == f"{used.accelerator_hours:.0f}"
                and m[3].replace(",", "") == f"{team.budget.accelerator_hours:.0f}"
                and m[4] == used.period and m[5] == f"{end:%a %d %b %H:%M}")

    return [
        (rf"^gets {N} because", lambda m: same(m[1], c.after)),
        (rf"cooldown until {WHEN} \(last changed ([0-9]+) min ago, cooldown {N} min\)", cooldown),
        (rf"a change of {N} is below min_step {N}",
         lambda m: same(m[1], abs((c.wanted or 0) - c.before)) and same(m[2], policy.stability.min_step)),
        (rf"what it runs is protected \({N} running\)", lambda m: same(m[1], running)),
        (rf"capacity {N} is below the quotas held", lambda m: same(m[1], f.capacity)),
        (rf"max_move {N}", lambda m: policy.stability.max_move is not None
         and same(m[1], policy.stability.max_move)),
        (rf"more than {N} resource entries", lambda m: same(m[1], MAX_ENTRIES)),
        (r"budget ([0-9]+) % used \(([0-9,]+) of ([0-9,]+) accelerator-hours, ([0-9W-]+)\): quota held at its "
         rf"guarantee until {WHEN}", budget),
    ]


# ---------------------------------------------------------------- the golden plans


def golden() -> Iterator[Any]:
    for teams in (3, 10, 57):
        for i, kw in enumerate(plan_outputs.CASES):
            yield pytest.param(teams, 100 + i, kw, id=f"{teams}-{i}-{'-'.join(sorted(kw))}")


@pytest.mark.parametrize(("teams", "seed", "kw"), list(golden()))
def test_golden_plans_state_their_rows_figures(teams: int, seed: int, kw: dict[str, Any]) -> None:
    snap, pol = plan_outputs.variant(teams, seed, **kw)
    check_plan(snap, pol, plan_bench.NOW)


# ---------------------------------------------------------------- random clusters

TYPES = ["ml.g5.12xlarge", "ml.p5.48xlarge"]
TEAMS = ["ana", "bob", "cyd", "dee"]


@st.composite
def cases(draw: st.DrawFn) -> tuple[Snapshot, Policy, PlanningContext]:
    types = draw(st.lists(st.sampled_from(TYPES), min_size=1, max_size=2, unique=True))
    per = {"ml.g5.12xlarge": 4, "ml.p5.48xlarge": 8}
    nodes = {t: (draw(st.integers(0, 4)), draw(st.integers(0, 2))) for t in types}
    teams = draw(st.lists(st.sampled_from(TEAMS), min_size=1, max_size=4, unique=True))
    amount = {t: st.integers(0, 3 * per[t]) for t in types}
    quotas = {team: {t: draw(amount[t]) for t in types} for team in teams if draw(st.booleans())}
    pending = {team: {t: draw(amount[t]) for t in types} for team in teams}
    in_use = {team: {t: draw(st.integers(0, per[t])) for t in types} for team in teams}
    modified = {team: T0 - timedelta(minutes=draw(st.integers(0, 90))) for team in quotas}
    team_policy: dict[str, dict[str, Any]] = {}
    usage = {}
    for team in teams:
        tp: dict[str, Any] = {"weight": draw(st.integers(0, 4)), "protected_in_use": draw(st.booleans())}
        if draw(st.booleans()):
            tp["guarantee"] = {t: draw(st.integers(0, 2 * per[t])) for t in types}
        if draw(st.booleans()):
            tp["cap"] = {t: tp.get("guarantee", {}).get(t, 0) + draw(st.integers(0, 2 * per[t])) for t in types}
        if draw(st.booleans()):
            tp["budget"] = {"accelerator_hours": 100, "on_exhausted": "guarantee_only"}
            usage[team] = BudgetUsage(period="2026-11", accelerator_hours=draw(st.sampled_from([50, 90, 120])))
        team_policy[team] = tp
    pol = Policy.model_validate({
        "teams": team_policy, "surplus": draw(st.sampled_from(["idle", "spread"])),
        "stability": {"min_step": draw(st.integers(1, 3)), "cooldown_minutes": draw(st.sampled_from([0, 30, 60])),
                      "max_move": draw(st.sampled_from([None, 0, 4, 16]))},
    })
    snap = snapshot(nodes, quotas=quotas, pending=pending, in_use=in_use, modified=modified)
    context = replace(planning_context(snap, pol), budget_usage=usage)
    return snap, pol, context


@properties(150)
@given(cases())
def test_random_plans_state_their_rows_figures(case: tuple[Snapshot, Policy, PlanningContext]) -> None:
    snap, pol, context = case
    check_plan(snap, pol, T0, context)


# ---------------------------------------------------------------- the rows


def test_a_team_running_all_its_demand_is_said_to_want_it() -> None:
    """research 12 → 8 said `demand 8 < allocation 12`: the 12 was the quota being cut, not an allocation."""
    p5 = "ml.p5.48xlarge"
    snap = snapshot({p5: 4}, quotas={"research": {p5: 12}, "training": {p5: 12}},
                    in_use={"research": {p5: 8}, "training": {p5: 8}})
    pol = Policy.model_validate({"teams": {"research": {"weight": 3}, "training": {"weight": 3}}})
    plan = check_plan(snap, pol, T0)
    assert [(c.team, c.before, c.after, c.reason) for c in plan.changes] == [
        ("research", 12, 8, "wants 8 because demand 8 (8 running)"),
        ("training", 12, 8, "wants 8 because demand 8 (8 running)")]


def test_a_team_cut_to_nothing_is_told_the_guarantees_take_the_pool() -> None:
    """training 12 → 0 said `demand 8 < allocation 12` for a team running 8: the guarantees (a reservation's among
    them) take all 32 GPUs."""
    p5 = "ml.p5.48xlarge"
    snap = snapshot({p5: 4}, quotas={"training": {p5: 12}, "research": {p5: 12}, "inference": {p5: 8}},
                    in_use={"training": {p5: 8}, "research": {p5: 8}, "inference": {p5: 4}})
    pol = Policy.model_validate({"teams": {"training": {"weight": 3}, "research": {"weight": 3, "guarantee": {p5: 16}},
                                           "inference": {"weight": 2, "guarantee": {p5: 16}}}})
    plan = check_plan(snap, pol, T0)
    reasons = {c.team: c.reason for c in plan.changes}
    assert reasons["training"] == "wants 0 because guarantees take 32 of 32 (demand 8, 8 running)"
    assert reasons["research"] == "wants 16 because guarantee 16 (demand 8, 8 running)"


def test_holds_overridden_by_lost_capacity_are_said_once() -> None:
    """Both teams cooling down when a node fails, a cut by two tiers of the shrink (held quota nobody runs on, then
    the holds): `overridden: quotas above capacity` was said once per tier."""
    p5 = "ml.p5.48xlarge"
    cooled = {"a": T0 - timedelta(minutes=5), "b": T0 - timedelta(minutes=5)}
    snap = snapshot({p5: (2, 1)}, quotas={"a": {p5: 12}, "b": {p5: 12}}, in_use={"a": {p5: 10}, "b": {p5: 12}},
                    modified=cooled)
    pol = Policy.model_validate({"stability": {"cooldown_minutes": 30}, "teams": {"a": {}, "b": {}}})
    plan = check_plan(snap, pol, T0)
    assert [(c.team, c.after, c.reason) for c in plan.changes] == [
        ("a", 8, "wants 8 because share 8 of 16 by weight 1 of 2 (demand 10, 10 running); "
                 "1 node of ml.p5.48xlarge unhealthy"),
        ("b", 8, "wants 8 because share 8 of 16 by weight 1 of 2 (demand 12, 12 running); "
                 "1 node of ml.p5.48xlarge unhealthy")]


def test_a_cooldown_that_holds_every_change_is_shown_with_its_end() -> None:
    """The sandbox's case: right after its quotas were written, a policy with a 120-minute cooldown planned
    `no change needed` while without the cooldown it changes two quotas."""
    p5 = "ml.p5.48xlarge"
    snap = snapshot({p5: 4}, quotas={"research": {p5: 12}, "training": {p5: 12}, "inference": {p5: 8}},
                    in_use={"research": {p5: 8}, "training": {p5: 8}, "inference": {p5: 8}},
                    modified=dict.fromkeys(("research", "training", "inference"), T0 - timedelta(minutes=3)))
    teams = {"research": {"weight": 3}, "training": {"weight": 3}, "inference": {"weight": 2}}
    cooling = Policy.model_validate({"stability": {"cooldown_minutes": 120}, "teams": teams})
    plan = check_plan(snap, cooling, T0)
    assert plan.changes == ()
    assert [(c.team, c.before, c.after, c.wanted) for c in plan.held] == [
        ("research", 12, 12, 8), ("training", 12, 12, 8)]
    hold = plan.held[0].hold
    assert hold is not None
    assert hold.until == T0 + timedelta(minutes=117)
    assert plan.held[0].reason == ("wants 8 because demand 8 (8 running); gets 12 because cooldown until Mon 30 Nov "
                                   "13:57 UTC (last changed 3 min ago, cooldown 120 min)")
    assert plan.headline() == "test: nothing changes now: 2 changes held back (cooldown until Mon 30 Nov 13:57 UTC)"
    free = check_plan(snap, cooling.model_copy(update={"stability": cooling.stability.model_copy(
        update={"cooldown_minutes": 0})}), T0)
    assert [(c.team, c.after) for c in free.changes] == [("research", 8), ("training", 8)]
    assert free.held == ()


def test_increases_a_quota_cannot_hold_are_held_back_and_say_why() -> None:
    """A quota holds at most 15 resource entries: the increases that would need a 16th are not written, so they
    are held back with that reason, not dropped."""
    types = plan_bench.instance_types(16)
    snap = snapshot(dict.fromkeys(types, 1), quotas={"a": dict.fromkeys(types[:15], 1)},
                    pending={"a": dict.fromkeys(types, 64)})
    plan = check_plan(snap, Policy.model_validate({"teams": {"a": {}}}), T0)
    assert plan.changes == ()
    assert plan.held  # every type of more than one accelerator per node
    assert {c.hold.rule for c in plan.held if c.hold is not None} == {"entries"}
    assert all(c.wanted is not None and c.wanted > c.before for c in plan.held)
    [new] = [c for c in plan.held if c.before == 0]
    assert new.instance_type == types[15]
    assert new.reason == ("wants 1 because share 1 of 1 by weight 1 of 1 (demand 64, 0 running); gets 0 because its "
                          "quota would need more than 15 resource entries")
