"""Collect: the cluster's snapshot, stored for the later steps, and the budget use metered since the last one."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rebalancer.app import budgets
from rebalancer.app.workflow import runs
from rebalancer.app.workflow.runs import Store
from rebalancer.app.workflow.state import RunRef
from rebalancer.domain.snapshot import Snapshot


def collect(run: RunRef, *, store: Store, read_snapshot: Callable[[str], Snapshot]) -> dict[str, Any]:
    snapshot = read_snapshot(run.cluster_name)
    runs.record_snapshot(store, run, snapshot)
    metered = budgets.meter(store, snapshot)
    return {"taken_at": snapshot.taken_at.isoformat(), "cluster_arn": snapshot.cluster.ClusterArn,
            "nodes": len(snapshot.nodes), "quotas": len(snapshot.quotas), "metered": metered.status}
