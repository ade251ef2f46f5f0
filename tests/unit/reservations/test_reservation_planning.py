"""The planner honours an active, approved reservation inside [start, until): its team's guarantee in its pool is at
least the reserved amount, the reasons name it, and once the window is over the plan is the policy's own again.
Other teams' guarantees stay exact and the pool is never over-allocated."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from support.clock import T0
from support.clusters import apply_plan, policy, snapshot
from support.props import properties

from rebalancer.domain.reservation import Reservation
from rebalancer.domain.snapshot import Snapshot
from rebalancer.planning.context import planning_context
from rebalancer.planning.planner import make_plan

P5 = "ml.p5.48xlarge"
POLICY = policy({"research": {}, "inference": {"guarantee": {P5: 16}}})
UNTIL = T0 + timedelta(days=2)


def reservation(n: int = 32, *, team: str = "research", status: str = "approved", **extra: Any) -> Reservation:
    return Reservation.model_validate({
        "reservation_id": "r-1", "cluster": "test", "team": team, "pool": P5, "accelerators": n,
        "start": T0, "until": UNTIL, "reason": "launch", "status": status, "requested_by": "alice",
        "requested_at": T0 - timedelta(hours=1), **extra})


def busy(at: Any = T0, research: float = 64) -> Snapshot:
    """64 p5 accelerators; inference has all of them and wants them; research has nothing pending."""
    return snapshot({P5: 8}, quotas={"inference": {P5: 64}, "research": {P5: 0}},
                    pending={"inference": {P5: 64}}, in_use={"inference": {P5: 64}}, taken_at=at)


def after(snap: Snapshot, reservations: list[Reservation], pol: Any = POLICY) -> dict[str, float]:
    context = planning_context(snap, pol, reservations=reservations)
    plan = make_plan(snap, pol, snap.taken_at, context=context)
    return {t: sum(p.get("accelerators", 0.0) for p in pools.values()) for t, pools in plan.allocations.items()}


def test_an_active_reservation_raises_the_guarantee_and_the_reason_names_it() -> None:
    snap = busy()
    plan = make_plan(snap, POLICY, T0, context=planning_context(snap, POLICY, reservations=[reservation()]))
    up = next(c for c in plan.changes if c.team == "research")
    assert (up.before, up.after) == (0, 32)
    assert "reservation r-1 for launch until Wed 02 Dec 12:00 UTC" in up.reason
    down = next(c for c in plan.changes if c.team == "inference")
    assert down.after == 32
    # the team that makes room says why its quota drops
    assert f"32 of {P5} reserved for research (reservation r-1 for launch until Wed 02 Dec 12:00 UTC)" in down.reason


def test_it_is_honoured_from_its_start_and_dropped_at_its_until() -> None:
    r = reservation()
    assert after(busy(T0 - timedelta(seconds=1)), [r]).get("research", 0) == 0
    assert after(busy(T0), [r])["research"] == 32
    assert after(busy(UNTIL - timedelta(seconds=1)), [r])["research"] == 32
    assert after(busy(UNTIL), [r]).get("research", 0) == 0


def test_the_next_run_after_until_brings_the_quota_back() -> None:
    snap = busy()
    plan = make_plan(snap, POLICY, T0, context=planning_context(snap, POLICY, reservations=[reservation()]))
    held = apply_plan(snap, plan, T0).model_copy(update={"taken_at": UNTIL})
    back = make_plan(held, POLICY, UNTIL, context=planning_context(held, POLICY, reservations=[reservation()]))
    assert {c.team: (c.before, c.after) for c in back.changes} == {"research": (32, 0), "inference": (32, 64)}
    assert not any("reservation" in c.reason for c in back.changes)


def test_pending_cancelled_and_other_clusters_reservations_are_not_honoured() -> None:
    for r in (reservation(status="pending"), reservation(status="cancelled"),
              reservation().model_copy(update={"cluster": "other"})):
        assert after(busy(), [r]).get("research", 0) == 0


def test_a_reservation_below_the_guarantee_changes_nothing() -> None:
    assert after(busy(), [reservation(8, team="inference")]) == after(busy(), [])


def test_a_reservation_above_a_cap_set_since_is_held_at_the_cap_with_a_warning() -> None:
    capped = policy({"research": {"cap": {P5: 20}}, "inference": {"guarantee": {P5: 16}}})
    snap = busy()
    plan = make_plan(snap, capped, T0, context=planning_context(snap, capped, reservations=[reservation()]))
    assert {c.team: c.after for c in plan.changes}["research"] == 20
    assert any("capped at 20" in w for w in plan.warnings)


def test_a_reservation_of_a_team_the_policy_drops_is_a_warning() -> None:
    alone = policy({"inference": {"guarantee": {P5: 16}}})
    snap = busy()
    plan = make_plan(snap, alone, T0, context=planning_context(snap, alone, reservations=[reservation()]))
    assert any("r-1" in w and "not honoured" in w for w in plan.warnings)


@properties(60)
@given(st.integers(1, 12), st.lists(st.tuples(st.integers(0, 3), st.integers(1, 40), st.booleans()),
                                     min_size=1, max_size=4),
       st.lists(st.integers(0, 16), min_size=4, max_size=4), st.lists(st.integers(0, 96), min_size=4, max_size=4))
def test_never_above_capacity_and_other_guarantees_exact(nodes: int, reserved: list[tuple[int, int, bool]],
                                                         guarantees: list[int], demand: list[int]) -> None:
    teams = [f"t{i}" for i in range(4)]
    pol = policy({t: {"guarantee": {P5: g}} if g else {} for t, g in zip(teams, guarantees, strict=True)})
    total = nodes * 8
    snap = snapshot({P5: nodes}, pending={t: {P5: d} for t, d in zip(teams, demand, strict=True) if d})
    rs = [reservation(n, team=teams[i], reservation_id=f"r-{k}", status="approved" if on else "pending")
          for k, (i, n, on) in enumerate(reserved)]
    got = after(snap, rs, pol)
    assert sum(got.values()) <= total
    floor = {t: float(g) for t, g in zip(teams, guarantees, strict=True)}
    for r in rs:
        if r.status == "approved":
            floor[r.team] = max(floor[r.team], float(sum(x.accelerators for x in rs
                                                         if x.team == r.team and x.status == "approved")))
    if sum(floor.values()) <= total:  # what refusal at creation ensures: every floor is then held exactly or more
        for t in teams:
            assert got.get(t, 0.0) >= floor[t]
        untouched = {x.team for x in rs if x.status == "approved"}
        for t in set(teams) - untouched:
            if guarantees[teams.index(t)] and not demand[teams.index(t)]:
                assert got.get(t, 0.0) == guarantees[teams.index(t)]  # an idle team's guarantee: exactly it


COOLING = POLICY.model_copy(update={"stability": POLICY.stability.model_copy(update={"cooldown_minutes": 30})})


def cooling(modified: dict[str, Any]) -> Snapshot:
    return snapshot({P5: 8}, quotas={"inference": {P5: 64}, "research": {P5: 0}}, pending={"inference": {P5: 64}},
                    in_use={"inference": {P5: 64}}, modified=modified)


def test_the_cooldown_does_not_hold_back_what_a_reservation_brings_when_it_begins() -> None:
    r = reservation(start=T0 - timedelta(minutes=1))
    # Both quotas changed 5 minutes ago, before the reservation began: neither is held.
    snap = cooling({"research": T0 - timedelta(minutes=5), "inference": T0 - timedelta(minutes=5)})
    assert after(snap, [r], COOLING) == {"research": 32, "inference": 32}
    assert after(snap, [], COOLING) == {"inference": 64}


def test_a_hold_that_keeps_a_reservation_short_is_a_warning() -> None:
    r = reservation(start=T0 - timedelta(minutes=1))
    snap = cooling({"inference": T0})  # changed after the reservation began: its cooldown holds
    plan = make_plan(snap, COOLING, T0, context=planning_context(snap, COOLING, reservations=[r]))
    assert plan.changes == ()
    assert any(w.startswith(f"research holds 0 of the 32 it reserves on {P5}") for w in plan.warnings)


def test_the_cooldown_counts_from_when_the_reservation_began_to_be_held_never_before_it_was_asked_for() -> None:
    """A lead of 30 minutes: a reservation asked for now and starting now is held from now, not from 30 minutes ago
    (quotas changed 5 minutes ago are not held by their cooldown); one starting in an hour is held from its lead,
    and a change made after that is held."""
    now = reservation(start=T0, lead_minutes=30, requested_at=T0)
    snap = cooling({"research": T0 - timedelta(minutes=5), "inference": T0 - timedelta(minutes=5)})
    assert after(snap, [now], COOLING) == {"research": 32, "inference": 32}
    later = reservation(start=T0 + timedelta(hours=1), lead_minutes=30, requested_at=T0 - timedelta(hours=1),
                        until=UNTIL + timedelta(hours=1))
    at = T0 + timedelta(minutes=40)  # inside its lead (from T0 + 30 min)
    changed_after = cooling({"inference": T0 + timedelta(minutes=35)}).model_copy(update={"taken_at": at})
    assert after(changed_after, [later], COOLING) == {"inference": 64}
    changed_before = cooling({"research": T0, "inference": T0}).model_copy(update={"taken_at": at})
    assert after(changed_before, [later], COOLING) == {"research": 32, "inference": 32}


def held(at: Any, changed: Any) -> Snapshot:
    """As the plan of a held reservation left them (research 32, inference 32), both written at `changed`."""
    return snapshot({P5: 8}, quotas={"inference": {P5: 32}, "research": {P5: 32}}, pending={"inference": {P5: 64}},
                    in_use={"inference": {P5: 32}}, modified={"research": changed, "inference": changed},
                    taken_at=at)


def test_a_cancelled_reservation_gives_its_quota_back_at_once_not_after_the_cooldown() -> None:
    """Its start moved the quotas past the cooldown; its cancellation, an admin's decision too, moves them back the
    same way: the room inference made is returned at the next run, not held for 30 minutes."""
    began = reservation(start=T0 - timedelta(minutes=1), started_at=T0)
    cancelled = began.model_copy(update={"status": "cancelled"})
    now = T0 + timedelta(minutes=10)
    assert after(held(now, T0), [], COOLING) == {"inference": 32, "research": 32}  # held, were it not the reservation's
    assert after(held(now, T0), [cancelled], COOLING) == {"inference": 64, "research": 0}
    # once given back, the cooldown holds the next change as any other
    back = snapshot({P5: 8}, quotas={"inference": {P5: 64}, "research": {P5: 0}}, pending={"research": {P5: 32}},
                    modified={"research": now, "inference": now}, taken_at=now + timedelta(minutes=5))
    ended = cancelled.model_copy(update={"ended_at": now})
    assert after(back, [ended], COOLING) == {"inference": 64}


def test_a_window_over_gives_its_quota_back_at_once_and_one_never_begun_changes_no_cooldown() -> None:
    r = reservation(start=T0 - timedelta(minutes=1), until=T0 + timedelta(minutes=20), started_at=T0)
    assert after(held(T0 + timedelta(minutes=21), T0), [r], COOLING) == {"inference": 64, "research": 0}
    # a cancelled reservation that never began moved nothing: the cooldown of a change made since holds
    never = reservation(start=T0 + timedelta(hours=2), status="cancelled")
    assert after(held(T0 + timedelta(minutes=10), T0), [never], COOLING) == {"inference": 32, "research": 32}
