"""The stability seam (rebalancer.engine.stability): each hold on its own — what it holds and the reason it gives —
the order the module states, and one effective policy that every stage of a plan reads."""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest
from support.clock import T0
from support.clusters import policy, snapshot

from rebalancer.domain.budget import BudgetUsage
from rebalancer.domain.context import PlanningContext
from rebalancer.domain.ownership import CLOUDFORMATION_STACK_TAG
from rebalancer.domain.plan import Hold
from rebalancer.domain.snapshot import Snapshot
from rebalancer.engine import stability
from rebalancer.engine.allocation import Claim, Claims, PoolInput, Settings, allocate
from rebalancer.engine.stability import RULES, SHRINK_TIERS, Admitted, cooling_down, effective, hold_pool
from rebalancer.planning.planner import make_plan

P5 = "ml.p5.48xlarge"
STAGES = ("policy", "claim", "pool", "plan")


def held(claims: list[Claim], desired: list[int], capacity: int = 100,
         settings: Settings | None = None) -> tuple[list[int], list[str | None], list[str]]:
    """The amounts held, each claim's hold as its text (None: not held) and the pool's warnings."""
    warnings: list[str] = []
    after, holds = hold_pool("p", capacity, desired, Claims.of(claims), settings or Settings(), warnings)
    return after, [h.text if h is not None else None for h in holds], warnings


# ---------------------------------------------------------------- the order


def _documented_order() -> list[tuple[str, str]]:
    """(rule, stage) of each numbered row of the table in the module's docstring."""
    rows = re.findall(r"^\s+\d+\s+(\S+(?: \S+)?)\s{2,}(policy|claim|pool|plan)\s", stability.__doc__ or "", re.M)
    return [(name, stage) for name, stage in rows]


def test_the_rules_are_applied_in_the_order_the_module_states() -> None:
    assert [(r.name, r.stage) for r in RULES] == _documented_order()
    assert [r.name for r in RULES] == ["reservations", "budget caps", "ownership", "cooldown", "min_step",
                                       "protected", "shrink tiers", "reclaim", "max_move"]


def test_stages_run_in_order_so_a_rule_sees_what_the_earlier_stages_did() -> None:
    ranks = [STAGES.index(r.stage) for r in RULES]
    assert ranks == sorted(ranks)
    assert stability.POLICY_RULES + stability.CLAIM_RULES + stability.POOL_RULES + stability.PLAN_RULES == RULES


def test_every_rule_says_what_it_holds() -> None:
    assert all(r.holds and r.name for r in RULES)
    assert len({r.name for r in RULES}) == len(RULES)


def test_the_shrink_takes_increases_then_idle_quota_then_breaks_holds_protection_last() -> None:
    assert [t.name for t in SHRINK_TIERS] == ["increases", "held idle", "idle", "waiting", "holds", "protected"]
    assert [t.name for t in SHRINK_TIERS if t.idle] == ["held idle", "idle", "waiting"]


# ---------------------------------------------------------------- claim rules


def test_cooldown_is_said_with_when_it_ends_the_age_and_the_setting_and_ends_at_the_setting() -> None:
    hold = cooling_down(T0 - timedelta(minutes=12), T0, 30)
    assert hold == Hold(rule="cooldown", until=T0 + timedelta(minutes=18),
                        text="cooldown until Mon 30 Nov 12:18 UTC (last changed 12 min ago, cooldown 30 min)")
    assert hold.label == "cooldown until Mon 30 Nov 12:18 UTC"
    assert cooling_down(T0 - timedelta(minutes=30), T0, 30) is None
    assert cooling_down(T0 - timedelta(minutes=1), T0, 0) is None  # cooldown off
    assert cooling_down(None, T0, 30) is None  # never modified (or not known)
    # a quota stamped after the snapshot (clocks apart) is cooling down, and says 0 minutes, not a negative age
    later = cooling_down(T0 + timedelta(minutes=5), T0, 30)
    assert later is not None
    assert "(last changed 0 min ago, cooldown 30 min)" in later.text


def test_cooldown_holds_a_cooling_team_at_its_quota_either_way_and_says_why() -> None:
    why = cooling_down(T0 - timedelta(minutes=3), T0, 30)
    after, reasons, _ = held([Claim("a", 1, current=10, cooldown=why), Claim("b", 1, current=10, cooldown=why),
                              Claim("c", 1, current=10)], [4, 16, 4])
    assert after == [10, 10, 4]
    assert why is not None
    assert reasons == [why.text, why.text, None]


def test_min_step_holds_a_change_smaller_than_the_step_only() -> None:
    after, reasons, _ = held([Claim("a", 1, current=10), Claim("b", 1, current=10), Claim("c", 1, current=10)],
                             [8, 13, 10], settings=Settings(min_step=3))
    assert after == [10, 13, 10]
    assert reasons == ["a change of 2 is below min_step 3", None, None]


def test_protection_keeps_what_a_protected_team_runs_never_more_than_its_quota() -> None:
    after, reasons, _ = held([Claim("a", 1, current=10, in_use=6, protected=True),
                              Claim("b", 1, current=10, in_use=6),
                              Claim("c", 1, current=10, in_use=14, protected=True)], [2, 2, 2])
    assert after == [6, 2, 10]
    assert reasons == ["what it runs is protected (6 running)", None, "what it runs is protected (14 running)"]


def test_a_claim_rule_sees_what_the_one_before_it_held() -> None:
    # min_step holds a's decrease of 2 at its quota, so protection (after it) finds nothing to raise: one reason
    after, reasons, _ = held([Claim("a", 1, current=10, in_use=9, protected=True)], [8],
                             settings=Settings(min_step=3))
    assert (after, reasons) == ([10], ["a change of 2 is below min_step 3"])


# ---------------------------------------------------------------- pool rule


def test_the_shrink_takes_quota_nobody_runs_on_before_breaking_a_hold() -> None:
    # capacity fell to 12: both quotas are cooling down at 10; a runs 2 and wants nothing more, b runs 10
    why = cooling_down(T0 - timedelta(minutes=3), T0, 30)
    assert why is not None
    after, reasons, warnings = held([Claim("a", 1, demand=2, current=10, in_use=2, cooldown=why),
                                     Claim("b", 1, demand=10, current=10, in_use=10, cooldown=why)], [2, 10],
                                    capacity=12)
    assert after == [2, 10]
    # said once, however many tiers cut it; b's amount does not move: no hold
    assert reasons == [f"{why.text}, overridden: capacity 12 is below the quotas held", None]
    assert warnings == ["p: capacity 12 is below the quotas; took 8 from held quota nobody runs on"]


def test_without_idle_first_the_shrink_breaks_holds_proportionally() -> None:
    why = cooling_down(T0 - timedelta(minutes=3), T0, 30)
    after, _, warnings = held([Claim("a", 1, demand=2, current=10, in_use=2, cooldown=why),
                               Claim("b", 1, demand=10, current=10, in_use=10, cooldown=why)], [6, 6],
                              capacity=12, settings=Settings(shrink_idle_first=False))
    assert after == [6, 6]
    assert warnings == ["p: capacity 12 is below the quotas kept by cooldown and min_step holds; overrode them by 8"]


# ---------------------------------------------------------------- plan rule


def _losing(key: str, resource: str = "accelerators") -> PoolInput:
    # a gives up 4 to b in each pool
    return PoolInput.of(key, resource, 8, [Claim("a", 1, demand=0, current=4), Claim("b", 1, demand=8, current=4)])


def test_max_move_is_shared_by_the_accelerator_pools_in_key_order_and_says_so() -> None:
    result = allocate([_losing("p2"), _losing("p1"), _losing("c", "vcpu")], Settings(max_move=5))
    moved = {p.key: [o.after for o in p.outcomes] for p in result.pools}
    assert moved == {"c": [0, 8], "p1": [0, 8], "p2": [3, 5]}  # p1 first takes 4, p2 the 1 left; vcpu not counted
    [p2] = [p for p in result.pools if p.key == "p2"]
    assert p2.reasons[0] == "wants 0 because no demand; gets 3 because max_move 5 is reached for this run"
    assert p2.reasons[1] == ("wants 8 because demand 8 (0 running); gets 5 because max_move 5 holds decreases back "
                             "for a later run, and the increases they make room for with them")
    assert "p2: max_move reached; 3 of 4 planned decreases held back for a later run" in result.warnings


def test_without_max_move_nothing_is_held_back() -> None:
    result = allocate([_losing("p1"), _losing("p2")], Settings(max_move=None))
    assert [[o.after for o in p.outcomes] for p in result.pools] == [[0, 8], [0, 8]]


# ---------------------------------------------------------------- plan rule: reclaim

RECLAIM = Settings(max_move=None, reclaim_max_age_minutes=30, reclaim_max_gpu_hours=16)


def _full(ages: list[float | None], *, b_pending: float = 32, capacity: float = 64, a_in_use: float = 64,
          a_weight: float = 1) -> PoolInput:
    """A full pool: a (protected) runs `a_in_use` in workloads of 8 admitted `ages` minutes ago (newest first); b
    runs nothing and waits for `b_pending`."""
    return PoolInput.of(P5, "accelerators", capacity, [
        Claim("a", a_weight, demand=a_in_use + 16, current=a_in_use, in_use=a_in_use, protected=True),
        Claim("b", 1, demand=b_pending, current=0)],
        admitted=(tuple(Admitted(8, m) for m in ages), ()))


def _after(pool: PoolInput, settings: Settings = RECLAIM) -> tuple[list[int], list[str]]:
    [result] = allocate([pool], settings).pools
    return list(result.after), list(result.reasons)


def test_reclaim_takes_the_newest_work_young_enough_for_a_team_waiting_below_its_fair_share_and_says_so() -> None:
    after, reasons = _after(_full([5, 15, 25, 35, 45, 55, 65, 75]))
    assert after == [40, 24]  # 5, 15 and 25 min old; the one 35 min old is past max_age_minutes 30
    assert reasons == [
        "wants 32 because share 32 of 64 by weight 1 of 2 (demand 80, 64 running); gets 40 because what it runs is "
        "protected (64 running); reclaims 24 accelerators of work admitted 5-25 min ago for team b waiting below "
        "its fair share",
        "wants 32 because demand 32 (0 running); gets 24 because reclaims 24 accelerators of work admitted 5-25 min "
        "ago from team a"]


def test_without_reclaim_the_new_team_gets_nothing_in_a_full_pool() -> None:
    assert _after(_full([5, 15, 25]), Settings(max_move=None))[0] == [64, 0]


def test_reclaim_never_cuts_a_team_below_its_fair_share_and_takes_only_whole_workloads() -> None:
    # a's fair share is 48 of 64 at weight 3: 16 above it, two young workloads of 8
    assert _after(_full([1, 2, 3, 4], a_weight=3))[0] == [48, 16]
    # 12 above its fair share: one workload of 8 fits whole, the second would take it below
    assert _after(_full([1, 2, 3], capacity=60, a_in_use=60, a_weight=4))[0] == [52, 8]


def test_reclaim_stops_at_its_budget_and_at_work_of_unknown_age() -> None:
    # 8 accelerators × 5, 15, 25 min run: 0.7, 2 and 3.3 GPU-hours; a budget of 3 takes the first two
    assert _after(_full([5, 15, 25]), replace(RECLAIM, reclaim_max_gpu_hours=3))[0] == [48, 16]
    assert _after(_full([5, 15, 25]), replace(RECLAIM, reclaim_max_gpu_hours=2))[0] == [56, 8]
    assert _after(_full([None, 5, 15]))[0] == [64, 0]  # the unknown might be Kueue's first: nothing is taken
    assert _after(_full([5, 15]), replace(RECLAIM, reclaim_max_gpu_hours=0))[0] == [64, 0]


def test_reclaim_serves_whole_pending_workloads_or_nothing() -> None:
    # b's workloads wait for 8, 8 and 16 in that order: 24 young accelerators let the first two start
    assert _after(replace(_full([5, 15, 25]), gangs=((), (8, 8, 16))))[0] == [48, 16]
    # one workload of 24 that the young work cannot cover: nothing is taken for quota it could not use
    assert _after(replace(_full([5, 15]), gangs=((), (24,))))[0] == [64, 0]


def test_reclaim_cuts_only_what_the_waiting_team_is_short_of() -> None:
    # b waits for 4 (c too, but cooling down): one workload of 8 is reclaimed (Kueue preempts it whole), and a's
    # quota drops by the 4 b is short of
    cooling = cooling_down(T0 - timedelta(minutes=3), T0, 30)
    pool = PoolInput.of(P5, "accelerators", 64, [
        Claim("a", 1, demand=80, current=64, in_use=64, protected=True), Claim("b", 1, demand=4),
        Claim("c", 1, demand=4, cooldown=cooling)], admitted=((Admitted(8, 5), Admitted(8, 15)), (), ()))
    after, reasons = _after(pool)
    assert after == [60, 4, 0]
    assert "reclaims 8 accelerators of work admitted 5 min ago for team b" in reasons[0]


# ---------------------------------------------------------------- policy rules: one effective policy


def _budgeted(used_hours: float, *, stack: bool = False) -> tuple[Snapshot, Any, PlanningContext]:
    """research (24 of 32 GPUs, guarantee 8) has a budget; ops's quota may be a CloudFormation stack's."""
    snap = snapshot({P5: 4}, quotas={"research": {P5: 20}, "training": {P5: 8}, "ops": {P5: 4}},
                    in_use={"research": {P5: 20}, "training": {P5: 8}}, pending={"research": {P5: 8}})
    context = PlanningContext(budget_usage={"research": BudgetUsage(period="2026-11", accelerator_hours=used_hours)})
    if stack:
        snap = snap.model_copy(update={"quota_tags": {"cq-ops": {CLOUDFORMATION_STACK_TAG: "ml-quotas"}}})
    pol = policy({"research": {"weight": 3, "guarantee": {P5: 8},
                               "budget": {"accelerator_hours": 1000, "on_exhausted": "guarantee_only"}},
                  "training": {"weight": 1}, "ops": {"weight": 1}})
    return snap, pol, context


def test_budget_caps_hold_an_exhausted_team_at_its_guarantee_and_note_it_on_its_changes() -> None:
    snap, pol, context = _budgeted(1040)
    held_policy = effective(pol, snap, context, (stability.BUDGET_CAPS,))
    assert held_policy.policy.teams["research"].cap[P5].value == 8
    assert pol.teams["research"].cap == {}  # the policy as written is left alone
    assert held_policy.notes["research"].endswith(": quota held at its guarantee")
    assert held_policy.closing == (f"research: {held_policy.notes['research']}",)
    assert held_policy.opening == ()


def test_ownership_holds_a_stack_s_quota_outside_the_policy_and_says_so_first() -> None:
    snap, pol, context = _budgeted(0, stack=True)
    held_policy = effective(pol, snap, context, (stability.OWNERSHIP,))
    assert "ops" not in held_policy.policy.teams
    assert "ops" in pol.teams
    [said] = held_policy.opening
    assert said.startswith("ops: its quota was created by CloudFormation stack ml-quotas: held outside the policy")
    assert held_policy.closing == ()
    assert held_policy.notes == {}


def test_every_stage_of_a_plan_reads_the_same_effective_policy() -> None:
    snap, pol, context = _budgeted(1040, stack=True)
    plan = make_plan(snap, pol, T0, context=context)
    # the engine planned research at its budget cap, and its change says so: what the policy as written wants,
    # what the budget holds it at, until the period ends
    [research] = [c for c in plan.changes if c.team == "research"]
    assert research.after == 8
    assert research.wanted == 21
    assert research.hold is not None
    assert research.hold.rule == "budget"
    assert research.hold.until == T0.replace(day=1, month=12, hour=0)
    assert research.reason == (
        "wants 21 because share 21 of 28 by weight 3 of 4 (demand 28, 20 running); gets 8 because budget 104 % used "
        "(1,040 of 1,000 accelerator-hours, 2026-11): quota held at its guarantee until Tue 01 Dec 00:00 UTC; "
        "4 held by teams outside the policy")
    # the request writer wrote the same amount, and nothing for the team held outside
    assert {r.team for r in plan.requests} == {"research"}
    assert "ops" not in {c.team for c in plan.changes}
    [request] = [r for r in plan.requests if r.team == "research"]
    assert request.parameters["ComputeQuotaConfig"]["ComputeQuotaResources"] == [
        {"InstanceType": P5, "Accelerators": 8}]
    # ownership speaks first (with the pools), budgets last (after the engine's and the writer's warnings)
    assert plan.warnings[0].startswith("ops: its quota was created by CloudFormation stack")
    assert plan.warnings[-1].startswith("research: budget 104 % used")


@pytest.mark.parametrize("used", [0, 1040])
def test_without_budget_or_stack_the_effective_policy_is_the_policy(used: float) -> None:
    snap, pol, context = _budgeted(used)
    unchanged = effective(pol.model_copy(update={"teams": {t: tp.model_copy(update={"budget": None})
                                                          for t, tp in pol.teams.items()}}), snap, context)
    assert unchanged.notes == {}
    assert unchanged.opening == unchanged.closing == ()
    assert set(unchanged.policy.teams) == set(pol.teams)


def test_a_rule_added_to_the_list_is_applied_by_the_engine_with_its_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    """The seam: a new rule is an entry in the list; the engine applies what the list holds (here a made-up rule,
    "never below 3", after protection), and its reason reaches the change."""
    def floor_of_3(claims: Any, i: int, amount: int, current: int, settings: Settings) -> tuple[int, Hold] | None:
        return (3, Hold(rule="floor", text="never below 3")) if amount < 3 <= current else None

    rule = stability.ClaimRule("floor", "never below 3", lambda _claims, _settings: True, floor_of_3)
    monkeypatch.setattr(stability, "CLAIM_RULES", (*stability.CLAIM_RULES, rule))
    [pool] = allocate([_losing("p1")], Settings()).pools
    assert [o.after for o in pool.outcomes] == [3, 5]
    assert pool.reasons[0] == "wants 0 because no demand; gets 3 because never below 3"
