"""A policy that cannot be kept is said before it is planned on: guarantees (and what active reservations hold, when
more) summing above an instance type's or a family's healthy capacity, each team named with its amount, and the
totals; in the plan's warnings, as a separate line. `why` never advises a guarantee the pool cannot keep."""

from __future__ import annotations

from datetime import timedelta

from hypothesis import given
from hypothesis import strategies as st
from support.clusters import T0, policy, snapshot

from rebalancer.domain.reservation import Reservation
from rebalancer.domain.snapshot import PendingWorkload
from rebalancer.planning.commitments import commitment_warnings
from rebalancer.planning.context import planning_context
from rebalancer.planning.planner import make_plan
from rebalancer.planning.why import explain

P5, P5EN = "ml.p5.48xlarge", "ml.p5en.48xlarge"


def reservation(team: str, n: int, *, active: bool = True) -> Reservation:
    start = T0 - timedelta(hours=1) if active else T0 + timedelta(hours=1)
    return Reservation(reservation_id=f"r-{team}", cluster="test", team=team, pool=P5, accelerators=n, start=start,
                       until=T0 + timedelta(hours=2), reason="launch", status="approved", requested_by="ann",
                       requested_at=T0 - timedelta(days=1))


def test_guarantees_above_a_pool_name_each_team_and_the_totals_in_the_plan() -> None:
    snap = snapshot({P5: 4}, quotas={"research": {P5: 16}, "training": {P5: 16}})  # 32 healthy GPUs
    p = policy({"research": {"guarantee": {P5: 24}}, "training": {"guarantee": {P5: 16}}, "infra": {}})
    expected = (f"guarantees and reservations on {P5} sum to 40, above its healthy capacity of 32 (guarantees are "
                "scaled down to fit, and a team without one may get nothing): research 24 guaranteed, training 16 "
                "guaranteed")
    assert commitment_warnings(snap, p) == [expected]
    assert expected in make_plan(snap, p, T0).warnings
    # A node fails: what fitted no longer does.
    fits = policy({"research": {"guarantee": {P5: 16}}, "training": {"guarantee": {P5: 16}}})
    assert commitment_warnings(snap, fits) == []
    failed = snapshot({P5: (3, 1)}, quotas={"research": {P5: 16}, "training": {P5: 16}})
    assert commitment_warnings(failed, fits) == [
        f"guarantees and reservations on {P5} sum to 32, above its healthy capacity of 24 (guarantees are scaled "
        "down to fit, and a team without one may get nothing): research 16 guaranteed, training 16 guaranteed"]


def test_a_reservation_counts_where_it_holds_more_than_the_guarantee() -> None:
    snap = snapshot({P5: 4})
    p = policy({"research": {"guarantee": {P5: 8}}, "training": {"guarantee": {P5: 16}}})
    assert commitment_warnings(snap, p, [reservation("research", 4)]) == []  # within its guarantee
    assert commitment_warnings(snap, p, [reservation("research", 24, active=False)]) == []  # not yet
    [line] = commitment_warnings(snap, p, [reservation("research", 24)])
    assert line == (f"guarantees and reservations on {P5} sum to 40, above its healthy capacity of 32 (guarantees "
                    "are scaled down to fit, and a team without one may get nothing): research 24 reserved, training "
                    "16 guaranteed")
    context = planning_context(snap, p, reservations=[reservation("research", 24)])
    assert line in make_plan(snap, p, T0, context=context).warnings


def test_a_family_guarantee_is_checked_against_the_familys_healthy_total() -> None:
    snap = snapshot({P5: 2, P5EN: 1})  # 16 + 8 GPUs in the family ml.p5
    p = policy({"serving": {"guarantee": {"ml.p5": 16}}, "research": {"guarantee": {P5EN: 8}},
                "training": {"guarantee": {P5: 8}}})
    assert commitment_warnings(snap, p) == [
        "guarantees and reservations on family ml.p5 sum to 32, above its healthy capacity of 24 (guarantees are "
        "scaled down to fit, and a team without one may get nothing): research 8 guaranteed, serving 16 guaranteed, "
        "training 8 guaranteed"]


def test_percent_guarantees_and_removed_teams_never_overcommit() -> None:
    snap = snapshot({P5: 4})
    p = policy({"a": {"guarantee": {P5: "60%"}}, "b": {"guarantee": {P5: "40%"}},
                "gone": {"guarantee": {P5: 32}, "remove": True}})
    assert commitment_warnings(snap, p) == []


@given(st.lists(st.integers(0, 40), min_size=1, max_size=6), st.integers(0, 6))
def test_said_exactly_when_the_guarantees_exceed_the_healthy_capacity(guarantees: list[int], nodes: int) -> None:
    snap = snapshot({P5: nodes})
    p = policy({f"t{i}": {"guarantee": {P5: g}} for i, g in enumerate(guarantees)})
    said = commitment_warnings(snap, p)
    assert bool(said) == (sum(guarantees) > nodes * 8)
    for line in said:
        assert f"sum to {sum(guarantees)}, above its healthy capacity of {nodes * 8} " in line
        assert all(f"t{i} {g} guaranteed" in line for i, g in enumerate(guarantees) if g)


def test_why_advises_no_guarantee_the_pool_cannot_keep() -> None:
    job = PendingWorkload(name="pretrain", team="a", pool=P5, accelerators=16, pods=2, created=T0)
    snap = snapshot({P5: 4}, quotas={"a": {P5: 8}, "b": {P5: 24}}, in_use={"a": {P5: 24}})
    snap = snap.model_copy(update={"pending_workloads": (job,)})
    got = explain(snap, None, "a").waiting[0]
    # 24 running + 16 asked = 40 on a pool of 32: no guarantee holds that.
    assert "a guarantee of 40" not in got.would_start
    assert got.would_start.startswith(f"8 of the team's own running work in {P5} ends (no guarantee can hold 40: "
                                      "the pool has 32 healthy accelerators)")
    # With the policy known, other teams' guarantees bound it too.
    small = PendingWorkload(name="eval", team="a", pool=P5, accelerators=8, pods=1, created=T0)
    fits = snapshot({P5: 4}, quotas={"a": {P5: 8}, "b": {P5: 24}}, in_use={"a": {P5: 8}, "b": {P5: 24}})
    fits = fits.model_copy(update={"pending_workloads": (small,)})
    assert "a guarantee of 16" in explain(fits, None, "a").waiting[0].would_start
    p = policy({"a": {}, "b": {"guarantee": {P5: 24}}})
    bounded = explain(fits, None, "a", policy=p).waiting[0].would_start
    assert "a guarantee of 16" not in bounded
    assert "(no guarantee can hold 16: the pool has 32 healthy accelerators, 24 of them guaranteed to other " \
           "teams)" in bounded
