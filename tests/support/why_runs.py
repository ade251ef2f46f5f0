"""Two recorded runs of cluster `test` for `why` (the use case, the CLI, the Slack command): the first planned and
applied a change of team a's quota (24 → 8, "idle 90 % of its quota"), the second planned from a snapshot in which a
waits with a 16-GPU gang. Written with the workflow's own writers, into any store (memory or the table in moto)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from rebalancer.adapters.sagemaker.outcomes import ApplyReport
from rebalancer.app.workflow import audit, state
from rebalancer.app.workflow.state import RunRef
from rebalancer.domain.plan import Change, Plan
from rebalancer.domain.snapshot import PendingWorkload, Snapshot
from support.clusters import T0, snapshot

P5 = "ml.p5.48xlarge"
CLUSTER = "test"
FIRST, SECOND = "test-0001", "test-0002"


def run(execution: str) -> RunRef:
    return RunRef(cluster_name=CLUSTER, execution_name=execution,
                  execution_arn=f"arn:aws:states:us-east-1:123456789012:execution:rebalance:{execution}")


def waiting_snapshot() -> Snapshot:
    """4 p5 nodes (32 GPUs); a: quota 8, all in use; b: quota 24, 20 in use; a's 16-GPU gang waits."""
    snap = snapshot({P5: 4}, quotas={"a": {P5: 8}, "b": {P5: 24}}, in_use={"a": {P5: 8}, "b": {P5: 20}},
                    pending={"a": {P5: 16}})
    gang = PendingWorkload(name="pretrain", team="a", pool=P5, accelerators=16, pods=2,
                           created=T0 - timedelta(hours=5))
    return snap.model_copy(update={"pending_workloads": (gang,)})


def record_runs(store: Any) -> None:
    """`store`: artifacts and audit (the table's Store, MemoryStore)."""
    cut = Change(team="a", instance_type=P5, resource="accelerators", before=24, after=8,
                 reason="idle 90 % of its quota")
    first = Plan(cluster_name=CLUSTER, cluster_arn=waiting_snapshot().cluster.ClusterArn, taken_at=T0, mode="auto",
                 changes=(cut,), allocations={"a": {P5: {"accelerators": 8.0}}, "b": {P5: {"accelerators": 24.0}}})
    state.record_snapshot(store.artifacts, run(FIRST), waiting_snapshot())
    store.artifacts.put(FIRST, "PLAN", first.model_dump(mode="json"))
    audit.planned(store.audit, run(FIRST), first, decision="apply", known_versions={})
    audit.applied(store.audit, run(FIRST), first, ApplyReport(cluster_arn=first.cluster_arn, succeeded=True), None,
                  versions={}, who=None)
    second = first.model_copy(update={"changes": (), "warnings": ("b: budget 80 % used",)})
    state.record_snapshot(store.artifacts, run(SECOND), waiting_snapshot())
    store.artifacts.put(SECOND, "PLAN", second.model_dump(mode="json"))
    audit.planned(store.audit, run(SECOND), second, decision="no_change", known_versions={})
