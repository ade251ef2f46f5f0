"""A full cluster where a plan's raise makes Kueue take back borrowed work: 16 H100s all b's (its quota 16, a's 0),
a waiting for 8; and a plan that names many preemptions, for the renderers' bounds."""

from __future__ import annotations

from datetime import timedelta

from rebalancer.domain.plan import Plan, Preemption
from rebalancer.domain.snapshot import PendingWorkload, RunningWorkload, Snapshot
from support.clusters import T0, snapshot

P5 = "ml.p5.48xlarge"
H = timedelta(hours=1)
OPEN = {"moved_accelerators": 100, "max_decrease_percent": 100}  # approval rules that a plan here never trips
Run = tuple[str, int, timedelta | None]  # a workload of b: name, accelerators, how long it has run (None: not read)


def full(b_runs: tuple[Run, ...] = (("b-old", 8, 3 * H), ("b-new", 8, H))) -> Snapshot:
    used = sum(g for _, g, _ in b_runs)
    snap = snapshot({P5: 2}, quotas={"a": {P5: 0}, "b": {P5: 16}}, in_use={"b": {P5: used}}, pending={"a": {P5: 8}})
    return snap.model_copy(update={
        "running_workloads": tuple(RunningWorkload(name=n, team="b", pool=P5, accelerators=g, pods=1,
                                                   started=None if ran is None else T0 - ran)
                                   for n, g, ran in b_runs),
        "pending_workloads": (PendingWorkload(name="a-1", team="a", pool=P5, accelerators=8, pods=1,
                                              created=T0 - H),)})


def many(plan: Plan, n: int, unlisted: int = 0, name: str = "b-workload") -> Plan:
    """`plan` naming n preemptions (each 8 accelerators, the first the longest run) and `unlisted` more."""
    found = tuple(Preemption(team=f"team-{i % 7}", workload=f"{name}-{i:04d}", pool=P5, accelerators=8,
                             ran_s=3600.0 * (n - i)) for i in range(n))
    hours = sum(p.gpu_hours for p in found) + unlisted
    return plan.model_copy(update={"preemptions": found, "preemptions_unlisted": unlisted,
                                   "preempted_gpu_hours": hours})
