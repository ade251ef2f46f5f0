"""The planner is total (issue 25 item 3): for any policy the loader accepts — budgets included, exhausted or not,
with or without thresholds — and any snapshot with period-to-date use, `make_plan` and the deployed plan step
return a plan whose every figure is finite; they never raise."""

from __future__ import annotations

import json
import math
from datetime import datetime, timedelta
from typing import Any

from hypothesis import assume, given
from hypothesis import strategies as st
from support.clock import T0
from support.clusters import snapshot
from support.props import properties

from rebalancer.app.workflow import state
from rebalancer.app.workflow.steps.plan import plan as plan_step
from rebalancer.budgets.metering import Fact
from rebalancer.catalog import specs as catalog
from rebalancer.domain.budget import MAX_HOURS, MAX_MONEY, BudgetUsage
from rebalancer.domain.policy import Policy
from rebalancer.domain.snapshot import Snapshot
from rebalancer.errors import InvalidInput
from rebalancer.parsing.loading import MAX_NUMBER
from rebalancer.parsing.validation import load_model
from rebalancer.planning.planner import make_plan
from rebalancer_tools.fakes.memory_store import MemoryMeter, MemoryStore

TYPES = ["ml.p5.48xlarge", "ml.g5.12xlarge", "ml.trn1.32xlarge", "ml.c5.4xlarge"]
TEAMS = ["ana", "bob", "cyd"]
HOURS = st.floats(0.01, MAX_HOURS) | st.sampled_from([0.01, 1.0, MAX_HOURS])
USE = st.floats(0, MAX_NUMBER) | st.sampled_from([0.0, 1e-300, MAX_NUMBER])


@st.composite
def budgets(draw: st.DrawFn) -> dict[str, Any]:
    doc: dict[str, Any] = {}
    if draw(st.booleans()):
        doc["accelerator_hours"] = draw(HOURS)
    if draw(st.booleans()) or not doc:
        doc["money"] = draw(st.floats(0.01, MAX_MONEY))
    doc["period"] = draw(st.sampled_from(["month", "week"]))
    doc["timezone"] = draw(st.sampled_from(["UTC", "Pacific/Kiritimati", "America/Adak", "Europe/Berlin"]))
    doc["scope"] = draw(st.sampled_from(["all", "ml.p5", "ml.p5.48xlarge", "ml.trn1", "ml.g5.12xlarge"]))
    doc["on_exhausted"] = draw(st.sampled_from(["guarantee_only", "no_borrowing", "notify"]))
    doc["notify_at"] = draw(st.lists(st.integers(1, 1000), max_size=3))
    return doc


@st.composite
def policies(draw: st.DrawFn, types: list[str]) -> Policy:
    teams: dict[str, Any] = {}
    for team in draw(st.lists(st.sampled_from(TEAMS), min_size=1, unique=True)):
        per = {t: catalog.spec(t).primary_per_instance for t in types}
        tp: dict[str, Any] = {"weight": draw(st.floats(0, 100)), "protected_in_use": draw(st.booleans()),
                              "remove": draw(st.booleans())}
        if draw(st.booleans()):
            tp["guarantee"] = {t: draw(st.integers(0, 2 * per[t])) for t in types}
        if draw(st.booleans()):
            tp["cap"] = {t: draw(st.integers(0, 4 * per[t])) for t in types}
        if draw(st.booleans()):
            tp["sharing"] = {"strategy": "LendAndBorrow", "borrow_limit": draw(st.integers(0, 500))}
        if draw(st.booleans()):
            tp["budget"] = draw(budgets())
        teams[team] = tp
    prices = {t: draw(st.floats(0.01, 1e6)) for t in types if draw(st.booleans())}
    doc = {"teams": teams, "prices": prices, "surplus": draw(st.sampled_from(["idle", "spread"])),
           "mode": draw(st.sampled_from(["auto", "approve"])),
           "stability": {"min_step": draw(st.integers(1, 3)), "cooldown_minutes": 0, "max_move": None}}
    try:
        return load_model(Policy, doc, "generated policy")
    except InvalidInput:
        assume(False)  # the property is about what the loader accepts
        raise


@st.composite
def cases(draw: st.DrawFn) -> tuple[Snapshot, Policy, list[Fact]]:
    types = draw(st.lists(st.sampled_from(TYPES), min_size=1, max_size=3, unique=True))
    pol = draw(policies(types))
    per = {t: catalog.spec(t).primary_per_instance for t in types}
    nodes = {t: (draw(st.integers(0, 4)), draw(st.integers(0, 2))) for t in types}
    quotas = {team: {t: draw(st.integers(0, 3 * per[t])) for t in types} for team in TEAMS if draw(st.booleans())}
    pending = {team: {t: draw(st.integers(0, 3 * per[t])) for t in types} for team in TEAMS}
    in_use = {team: {t: draw(st.integers(0, per[t])) for t in types} for team in TEAMS}
    snap = snapshot(nodes, quotas=quotas, pending=pending, in_use=in_use)
    usage = {team: BudgetUsage(period="2026-11", accelerator_hours=draw(USE), borrowed_hours=draw(USE),
                               cost=draw(USE), estimated=draw(st.booleans()),
                               unpriced=tuple(draw(st.lists(st.sampled_from(types), max_size=2, unique=True))))
             for team in pol.teams if draw(st.booleans())}
    rate = st.floats(0, 1e6)
    facts = [Fact(start=T0 - timedelta(days=d + 1), end=T0 - timedelta(days=d),
                  at_start={team: {t: (draw(rate), draw(rate)) for t in types} for team in pol.teams},
                  at_end={team: {t: (draw(rate), draw(rate)) for t in types} for team in pol.teams})
             for d in range(draw(st.integers(0, 2)))]
    return snap.model_copy(update={"budget_usage": usage}), pol, facts


def _finite(doc: Any) -> None:
    json.dumps(doc, allow_nan=False)  # raises on NaN / Infinity anywhere in the plan


@properties(80)
@given(cases())
def test_make_plan_never_raises_for_a_policy_the_loader_accepts(case: tuple[Snapshot, Policy, list[Fact]]) -> None:
    snap, pol, _ = case
    plan = make_plan(snap, pol, T0)
    _finite(plan.model_dump(mode="json"))
    assert all(math.isfinite(c.after) for c in plan.changes)


class MeteredFacts(MemoryMeter):
    """The in-memory meter holding given facts, so the plan step computes period-to-date use itself."""

    def __init__(self, given: list[Fact]) -> None:
        super().__init__()
        self.given = given

    def facts(self, cluster_name: str, since: datetime, until: datetime) -> list[Fact]:
        return [f for f in self.given if f.end > since and f.start < until]


def finite_figures(cluster: str, used: dict[str, tuple[float, float]]) -> None:
    _finite(used)


@properties(40)
@given(cases())
def test_the_plan_step_never_raises_for_a_policy_the_loader_accepts(case: tuple[Snapshot, Policy, list[Fact]]) -> None:
    snap, pol, facts = case
    store = MemoryStore()
    store.meter = MeteredFacts(facts)
    run = state.RunRef(cluster_name=snap.cluster.ClusterName, execution_name="test-20261130T120000",
                       execution_arn="", source="cli")
    store.artifacts.put(run.execution_name, "SNAPSHOT", snap.model_dump(mode="json"))
    out = plan_step(run, store=store, load_policy=lambda _: pol, now=T0, budget_figures=finite_figures)
    _finite(out)
    _finite(store.artifacts.get(run.execution_name, "PLAN"))
    _finite(store.artifacts.get(run.execution_name, "NEWS"))
