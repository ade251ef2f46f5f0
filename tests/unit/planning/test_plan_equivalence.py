"""The optimized planner produces exactly the plan of the frozen pre-optimization copy (tests/support/planner_v0):
same JSON output, same Plan fields, same engine outcomes, on the examples, the benchmark's synthetic clusters and
random clusters with cooldowns, max_move, MIG pools, families, outsiders and console edits."""

from __future__ import annotations

import json
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st
from support.clusters import T0, snapshot
from support.planner_v0 import allocation as old_allocation
from support.planner_v0 import planning as old_planning
from support.props import properties

from rebalancer import allocation, catalog, planning
from rebalancer.models import Snapshot
from rebalancer.plan import Plan
from rebalancer.policy import Policy

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "benchmarks"))
import plan_bench  # noqa: E402

TYPES = ["ml.g5.12xlarge", "ml.p5.48xlarge", "ml.c5.4xlarge", "ml.p4d.24xlarge"]
TEAMS = ["ana", "bob", "cyd", "dee", "eve"]


def assert_same(snap: Snapshot, pol: Policy, known_versions: dict[str, int] | None = None) -> Plan:
    new = planning.make_plan(snap, pol, T0, known_versions=known_versions)
    old = old_planning.make_plan(snap, pol, T0, known_versions=known_versions)
    assert json.dumps(new.output()) == json.dumps(old.output())
    assert new.model_dump() == old.model_dump()
    assert new.model_dump_json() == old.model_dump_json()
    assert type(new.changes) is tuple
    assert type(new.requests) is tuple
    pools, warnings = planning.build_pools(snap, pol, T0)
    old_pools, old_warnings = old_planning.build_pools(snap, pol, T0)
    assert warnings == old_warnings
    settings = allocation.Settings(surplus=pol.surplus, min_step=pol.stability.min_step,
                                   max_move=pol.stability.max_move)
    new_result = allocation.allocate(pools, settings)
    old_result = old_allocation.allocate(old_pools, old_allocation.Settings(
        surplus=pol.surplus, min_step=pol.stability.min_step, max_move=pol.stability.max_move))
    assert new_result.warnings == old_result.warnings
    for p, q in zip(new_result.pools, old_result.pools, strict=True):
        assert (p.key, p.resource, p.capacity, p.warnings) == (q.key, q.resource, q.capacity, q.warnings)
        assert [(o.team, o.pool, o.resource, o.before, o.after, o.fair, o.desired, o.reason, o.changed)
                for o in p.outcomes] == \
               [(o.team, o.pool, o.resource, o.before, o.after, o.fair, o.desired, o.reason, o.changed)
                for o in q.outcomes]
    return new


def _examples() -> Snapshot:
    return Snapshot.model_validate(json.loads((ROOT / "examples" / "snapshot.json").read_text()))


@pytest.mark.parametrize("policy_file", ["policy.yaml", "demo-policy.yaml"])
@pytest.mark.parametrize("known", [None, {}, {"research": 1}])
def test_examples_plan_the_same(policy_file: str, known: dict[str, int] | None) -> None:
    pol = Policy.model_validate(yaml.safe_load((ROOT / "examples" / policy_file).read_text()))
    assert_same(_examples(), pol, known)


@pytest.mark.parametrize("teams", [10, 100])
@pytest.mark.parametrize("max_move", [None, 40])
def test_benchmark_clusters_plan_the_same(teams: int, max_move: int | None) -> None:
    snap, pol = plan_bench.synthetic(teams, plan_bench.instance_types())
    pol = pol.model_copy(update={"stability": pol.stability.model_copy(update={"max_move": max_move})})
    plan = assert_same(snap, pol)
    assert plan.changes  # the case is contended: there is something to compare
    assert_same(plan_bench.settled(snap, plan.allocations), pol)


@st.composite
def cases(draw: st.DrawFn) -> tuple[Snapshot, Policy, dict[str, int] | None]:
    types = draw(st.lists(st.sampled_from(TYPES), min_size=1, max_size=4, unique=True))
    nodes = {t: (draw(st.integers(0, 4)), draw(st.integers(0, 2))) for t in types}
    teams = draw(st.lists(st.sampled_from(TEAMS), min_size=1, max_size=5, unique=True))
    per = {t: catalog.spec(t).primary_per_instance for t in types}
    pools = list(types)
    mig: dict[str, dict[str, int]] = {}
    if "ml.p4d.24xlarge" in types and draw(st.booleans()):
        mig = {"ml.p4d.24xlarge": {"mig-1g.5gb": draw(st.integers(0, 14))}}
        pools.append("ml.p4d.24xlarge:mig-1g.5gb")
        per["ml.p4d.24xlarge:mig-1g.5gb"] = 7
    amount = {p: st.integers(0, 3 * per[p]) for p in pools}
    quota_teams = [*teams, *(["legacy"] if draw(st.booleans()) else [])]
    quotas = {team: {p: draw(amount[p]) for p in pools if draw(st.booleans())}
              for team in quota_teams if draw(st.booleans())}
    pending = {team: {p: draw(amount[p]) for p in pools if draw(st.booleans())} for team in teams}
    in_use = {team: {p: draw(st.integers(0, per[p])) for p in pools if draw(st.booleans())} for team in teams}
    modified = {team: T0 - timedelta(minutes=draw(st.integers(0, 90))) for team in quotas}
    team_policy: dict[str, Any] = {}
    for team in teams:
        tp: dict[str, Any] = {"weight": draw(st.integers(0, 4)), "protected_in_use": draw(st.booleans())}
        if draw(st.booleans()):
            tp["guarantee"] = {p: draw(st.integers(0, per[p])) for p in pools if draw(st.booleans())}
        if draw(st.booleans()):
            tp["cap"] = {p: draw(st.integers(per[p], 4 * per[p])) for p in pools if draw(st.booleans())}
        if draw(st.booleans()):
            tp.setdefault("guarantee", {})["ml.p5"] = draw(st.sampled_from([8, "50%"]))
        if draw(st.integers(0, 5)) == 0:
            tp["remove"] = True
        if draw(st.integers(0, 4)) == 0:
            tp["sharing"] = {"strategy": "DontLend"}
        team_policy[team] = tp
    pol_doc: dict[str, Any] = {
        "teams": team_policy, "surplus": draw(st.sampled_from(["idle", "spread"])),
        "mode": draw(st.sampled_from(["auto", "approve", "dry-run"])),
        "stability": {"min_step": draw(st.integers(1, 3)), "cooldown_minutes": draw(st.sampled_from([0, 30])),
                      "max_move": draw(st.sampled_from([None, 0, 4, 16]))},
        "approval": {"moved_accelerators": draw(st.integers(0, 20)),
                     "max_decrease_percent": draw(st.integers(0, 100))},
    }
    try:
        pol = Policy.model_validate(pol_doc)
    except ValueError:
        pol = Policy.model_validate({**pol_doc, "teams": {t: {"weight": 1} for t in teams}})
    known = draw(st.sampled_from([None, {}, dict.fromkeys(quotas, 1)]))
    snap = snapshot(nodes, quotas=quotas, pending=pending, in_use=in_use, modified=modified, mig=mig)
    return snap, pol, known


@properties(150)
@given(cases())
def test_random_clusters_plan_the_same(case: tuple[Snapshot, Policy, dict[str, int] | None]) -> None:
    snap, pol, known = case
    try:
        old_planning.make_plan(snap, pol, T0, known_versions=known)
    except Exception as e:  # the old code refused the input: the new code must refuse it the same way
        refused: Exception | None = e
    else:
        refused = None
    if refused is None:
        assert_same(snap, pol, known)
        return
    with pytest.raises(type(refused)) as new_error:
        planning.make_plan(snap, pol, T0, known_versions=known)
    assert str(new_error.value) == str(refused)
