"""Collect: the cluster's snapshot, stored for the later steps, and the budget use metered since the last one."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from rebalancer.app import budgets
from rebalancer.app.workflow.audit import AuditLog
from rebalancer.app.workflow.state import Artifacts, RunRef, record_snapshot
from rebalancer.domain.snapshot import Snapshot


class SnapshotsAndMeter(Protocol):
    """The run documents the snapshot is stored in, the meter its reading goes to, the audit log."""

    @property
    def artifacts(self) -> Artifacts: ...
    @property
    def audit(self) -> AuditLog: ...
    @property
    def meter(self) -> budgets.MeterRecords: ...


def collect(run: RunRef, *, store: SnapshotsAndMeter, read_snapshot: Callable[[str], Snapshot],
            again: bool = False, written: bool = False) -> dict[str, Any]:
    """`again`: after an approval or a notice, the cluster as it is now, for the plan to be checked against;
    `written`: once the write is verified, what Kueue preempted against what the plan named (app.workflow.preempted;
    the snapshot is not kept)."""
    snapshot = read_snapshot(run.cluster_name)
    if written:
        from rebalancer.app.workflow.preempted import record_preempted

        seen = record_preempted(store, run, snapshot)
        return {"named": len(seen["named"]), "preempted": len(seen["preempted"])}
    record_snapshot(store.artifacts, run, snapshot, again=again)
    metered = budgets.meter(store.meter, snapshot)
    return {"taken_at": snapshot.taken_at.isoformat(), "cluster_arn": snapshot.cluster.ClusterArn,
            "nodes": len(snapshot.nodes), "quotas": len(snapshot.quotas), "metered": metered.status}
