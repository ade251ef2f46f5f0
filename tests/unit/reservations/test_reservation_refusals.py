"""A reservation that cannot be kept is refused when it is made, in one line naming what does not fit: the window,
the pool, the team, the capacity that lasts, the team's caps, and overlaps with guarantees and other reservations."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from support.clock import T0
from support.clusters import policy, snapshot

from rebalancer.domain.reservation import Reservation
from rebalancer.errors import ReservationRefused
from rebalancer.planning.context import planning_context
from rebalancer.planning.planner import make_plan
from rebalancer.planning.reservations import refuse_if_unfit

P5, G5 = "ml.p5.48xlarge", "ml.g5.12xlarge"
SNAP = snapshot({P5: 8, "ml.m5.xlarge": 2})  # 64 p5 accelerators
POLICY = policy({"research": {"cap": {P5: 48}}, "inference": {"guarantee": {P5: 16}},
                 "serving": {"cap": {"ml.p5": 40}}, "fam": {"guarantee": {"ml.p5": 8}}, "gone": {"remove": True}})


def reservation(n: int = 32, *, team: str = "research", start: timedelta = timedelta(hours=1),
                hours: float = 48, rid: str = "r-new", **extra: Any) -> Reservation:
    return Reservation.model_validate({
        "reservation_id": rid, "cluster": "test", "team": team, "pool": P5, "accelerators": n,
        "start": T0 + start, "until": T0 + start + timedelta(hours=hours), "reason": "launch",
        "status": "approved", "requested_by": "alice", "requested_at": T0, **extra})


def refused(new: Reservation, others: list[Reservation] | None = None) -> str:
    with pytest.raises(ReservationRefused) as e:
        refuse_if_unfit(new, POLICY, SNAP, others or [], T0)
    message = str(e.value)
    assert "\n" not in message
    return message


def test_a_reservation_that_fits_is_kept() -> None:
    refuse_if_unfit(reservation(48), POLICY, SNAP, [], T0)


def test_bad_windows_are_refused() -> None:
    assert "is not after --from" in refused(reservation(hours=0))
    assert "is in the past" in refused(reservation(start=-timedelta(hours=3), hours=1))
    assert "--from" in refused(reservation(start=-timedelta(minutes=1)))


def test_the_window_edges_an_until_now_is_past_a_from_now_is_not() -> None:
    assert "in the past" in refused(reservation(start=-timedelta(hours=1), hours=1))  # until == now
    refuse_if_unfit(reservation(start=timedelta(0)), POLICY, SNAP, [], T0)


def test_above_the_capacity_that_lasts_is_refused() -> None:
    assert "above the 64 of ml.p5.48xlarge" in refused(reservation(65, team="inference"))


def test_above_the_team_cap_is_refused() -> None:
    assert "research's cap.ml.p5.48xlarge = 48" in refused(reservation(49))


def test_a_team_whose_cap_or_guarantee_names_the_family_is_refused_as_the_planner_would_not_honour_it() -> None:
    """Before, a team under a family cap was checked against it and stored, then never honoured: the planner cannot
    raise one type's guarantee beside a family cap (the policy refuses the two together)."""
    for team, field in (("serving", "cap"), ("fam", "guarantee")):
        assert f"team {team}'s {field} names the family ml.p5" in refused(reservation(8, team=team))
        r = reservation(8, team=team, start=timedelta(0))
        plan = make_plan(SNAP, POLICY, T0, context=planning_context(SNAP, POLICY, reservations=[r]))
        assert any(w.startswith(f"{r.label}: not honoured: team {team}'s {field} names the family ml.p5")
                   for w in plan.warnings)


def test_pools_and_teams_the_policy_cannot_hold_are_refused() -> None:
    assert "not managed by the policy" in refused(reservation(team="nobody"))
    assert "not managed by the policy" in refused(reservation(team="gone"))
    with pytest.raises(ReservationRefused, match="not an accelerator instance type"):
        refuse_if_unfit(reservation().model_copy(update={"pool": "ml.m5.xlarge"}), POLICY, SNAP, [], T0)


def test_overlaps_beyond_capacity_are_refused_with_who_holds_what() -> None:
    first = reservation(40, team="serving", rid="r-first")
    # 40 reserved + 16 guaranteed + 16 reserved by research = 72 > 64
    message = refused(reservation(16), [first])
    assert "would hold 72 of its 64 accelerators" in message
    assert "inference 16 guaranteed" in message
    assert "serving 40 reserved" in message


def test_windows_that_only_touch_do_not_overlap() -> None:
    first = reservation(40, team="serving", rid="r-first", hours=2)
    refuse_if_unfit(reservation(40, start=timedelta(hours=3)), POLICY, SNAP, [first], T0)  # starts at its until


def test_an_overlap_is_checked_where_the_later_reservation_starts() -> None:
    later = reservation(40, team="serving", rid="r-later", start=timedelta(hours=10))
    assert "would hold" in refused(reservation(16), [later])
    cancelled = later.model_copy(update={"status": "cancelled"})
    refuse_if_unfit(reservation(16), POLICY, SNAP, [cancelled], T0)


def test_a_team_reserving_below_its_guarantee_counts_its_guarantee_once() -> None:
    refuse_if_unfit(reservation(8, team="inference"), POLICY, SNAP, [reservation(48, rid="r-big")], T0)


def test_a_team_one_typo_from_a_policy_team_gets_did_you_mean() -> None:
    assert refused(reservation(team="reserch")) == ("--team: team reserch is not managed by the policy; did you mean "
                                                     "research?")
    assert refused(reservation(team="gon")).endswith("is not managed by the policy")  # a removed team is no answer
    assert "did you mean" not in refused(reservation(team="marketing"))
