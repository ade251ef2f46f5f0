"""`fairness.gang_steps` through the planner: the snapshot's pending workloads become the engine's gang sizes, per
pool and in admission order; off by default."""

from __future__ import annotations

from datetime import timedelta

from support.clusters import T0, policy, snapshot

from rebalancer.domain.policy import Policy
from rebalancer.domain.snapshot import PendingWorkload, Snapshot
from rebalancer.planning.gangs import gang_sizes
from rebalancer.planning.planner import make_plan

P5 = "ml.p5.48xlarge"


def overloaded() -> Snapshot:
    """Three teams on 90 GPUs (rounded down to whole nodes: 88): `big` waits for one 64-GPU gang, the others for
    64 GPUs of single-node jobs."""
    snap = snapshot({P5: 11}, quotas={t: {P5: 29} for t in ("big", "b", "c")},
                    pending={t: {P5: 64} for t in ("big", "b", "c")}, taken_at=T0)
    gangs = [PendingWorkload(name="pretrain", team="big", pool=P5, accelerators=64, pods=8, created=T0)]
    gangs += [PendingWorkload(name=f"{t}-{k}", team=t, pool=P5, accelerators=8, pods=1,
                              created=T0 - timedelta(minutes=k)) for t in ("b", "c") for k in range(8)]
    return snap.model_copy(update={"pending_workloads": tuple(gangs)})


def shares(snap: Snapshot, p: Policy) -> dict[str, float]:
    return {t: a[P5]["accelerators"] for t, a in make_plan(snap, p, T0).allocations.items()}


def test_off_by_default() -> None:
    assert shares(overloaded(), policy({"big": {}, "b": {}, "c": {}})) == {"big": 29, "b": 30, "c": 29}


def test_the_share_short_of_the_gang_goes_to_the_others_with_its_reason() -> None:
    stepped = policy({"big": {}, "b": {}, "c": {}}, fairness={"gang_steps": True})
    plan = make_plan(overloaded(), stepped, T0)
    # 29.3 each of 88: big's is 35 short of its gang, so 0; b and c go up in whole 8-GPU jobs, a job at a time to
    # the one furthest below its share (ties by name): 32, 32, then 40, 40, then 48 for b
    assert {t: a[P5]["accelerators"] for t, a in plan.allocations.items()} == {"big": 0, "b": 48, "c": 40}
    reasons = {c.team: c.reason for c in plan.changes}
    assert "gang steps: share 29.3 is short of its next pending workload (64 beyond 0)" in reasons["big"]
    assert "gang steps: share 29.3 raised to 48: what it runs plus whole pending workloads" in reasons["b"]


def test_gang_sizes_are_per_pool_in_creation_order() -> None:
    late, early = (PendingWorkload(name=n, team="a", pool=P5, accelerators=g, pods=1, created=T0 + timedelta(hours=h))
                   for n, g, h in (("late", 8, 2), ("early", 16, 1)))
    unknown = PendingWorkload(name="unknown", team="a", pool=P5, accelerators=4, pods=1)
    assert gang_sizes([unknown, late, early]) == {P5: {"a": (16, 8, 4)}}  # no creation time: last
