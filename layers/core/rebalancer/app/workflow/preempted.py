"""What Kueue preempted once a run's write was verified, against what the plan named: the workloads running in the
snapshot the written plan was made from (the cluster read again after an approval or a notice, else the run's
first) that the next read of Kueue finds pending again (Kueue requeues what it evicts; a workload neither running
nor pending finished). The run records both, in its audit log (`preempted`: as named, or how they differ) and as its
PREEMPTED document."""

from __future__ import annotations

from typing import Any

from rebalancer.app.workflow import audit
from rebalancer.app.workflow.notice import key
from rebalancer.app.workflow.state import RunRef, load_plan, stored_snapshot
from rebalancer.domain.outlook import workload_key
from rebalancer.domain.snapshot import Snapshot


def preempted_between(before: Snapshot, after: Snapshot) -> list[str]:
    """The workloads running in `before` and pending in `after` (team/name@pool), sorted."""
    waiting = {workload_key(w.team, w.name, w.pool) for w in after.pending_workloads}
    return sorted({k for w in before.running_workloads if (k := workload_key(w.team, w.name, w.pool)) in waiting})


def record_preempted(store: audit.Records, run: RunRef, after: Snapshot) -> dict[str, Any]:
    """Compare and record (nothing when the plan named none and Kueue preempted none); returns both lists."""
    plan = load_plan(store.artifacts, run)
    before = Snapshot.model_validate(stored_snapshot(store.artifacts, run, again=True))
    named = sorted(key(p) for p in plan.preemptions)
    preempted = preempted_between(before, after)
    seen = {"named": named, "preempted": preempted, "named_unlisted": plan.preemptions_unlisted}
    if named or preempted:
        store.artifacts.put(run.execution_name, "PREEMPTED", seen)
        audit.preemptions_seen(store.audit, run, named=named, preempted=preempted)
    return seen
