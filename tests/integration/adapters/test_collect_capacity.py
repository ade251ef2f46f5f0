"""Collect reads what today's HyperPod says about capacity, from the emulator and the Kubernetes fake: HyperPod's
node-health labels, nodes it is working on, spot groups, training plans and autoscaling; the plan reads them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from botocore.exceptions import ClientError
from support.emulator import in_process_emulator
from support.kube_api import KubeState, node, pod_set, serve, workload

from rebalancer.adapters.aws import AwsClients
from rebalancer.adapters.collect import KubeAccess, collect_snapshot
from rebalancer.domain.policy import Policy
from rebalancer.planning.planner import make_plan
from rebalancer.planning.pools import build_pools
from rebalancer_tools.fakes.kube import node_pool

NOW = datetime(2026, 11, 30, 5, 0, tzinfo=UTC)
P5 = "ml.p5.48xlarge"


def _policy(**rest: object) -> Policy:
    return Policy.model_validate({"teams": {"a": {"guarantee": {P5: 16}}, "b": {}},
                                  "stability": {"cooldown_minutes": 0, "max_move": None}, **rest})


def test_collect_carries_health_labels_plans_spot_and_autoscaling_and_the_plan_reads_them() -> None:
    with in_process_emulator(clock=lambda: NOW) as handle:
        emu = handle.emulator
        emu.create_cluster("c1", [("p5", P5, 4), ("p5-spot", P5, 2)])
        emu.set_node_status("c1", "p5-1", "DeepHealthCheckInProgress")
        plan_arn = emu.add_training_plan("p5-reserved", end_time=NOW + timedelta(minutes=10), instances=4)
        emu.set_group_fields("c1", "p5", TrainingPlanArn=plan_arn, TrainingPlanStatus="Active")
        emu.set_group_fields("c1", "p5-spot", CapacityRequirements={"Spot": {}})
        emu.set_autoscaling("c1")
        state = KubeState()
        state.add(node("hyperpod-p5-0", P5, {"nvidia.com/gpu": 8}, health="Schedulable"),
                  node("hyperpod-p5-spot-0", P5, {"nvidia.com/gpu": 8}, health="UnschedulablePendingReboot"))
        with serve(state) as (url, _):
            got = collect_snapshot("c1", AwsClients(region="us-east-1"), now=NOW,
                                   kube=KubeAccess(mode="url", url=url), metrics_window=None)
    snap = got.snapshot
    assert snap.node_health == {"p5-0": "Schedulable", "p5-spot-0": "UnschedulablePendingReboot"}
    assert snap.training_plans[plan_arn].EndTime == NOW + timedelta(minutes=10)
    assert snap.cluster.autoscaled
    assert [g.spot for g in snap.cluster.InstanceGroups] == [False, True]
    pools, _ = build_pools(snap, _policy(cluster={"autoscaling": {"max_nodes": {P5: 10}}}), NOW)
    [pool] = pools
    notes = " | ".join(pool.notes)
    # The plan's 4 nodes go in 10 minutes; of the 2 spot nodes one waits for a reboot (no repair grace by default);
    # the autoscaler may add 9.
    assert "4 nodes of ml.p5.48xlarge taken away ahead: training plan p5-reserved ends 2026-11-30T05:10:00+00:00" \
        in notes
    assert "1 node of ml.p5.48xlarge labelled UnschedulablePendingReboot" in notes
    assert "autoscaler may add 9 nodes of ml.p5.48xlarge" in notes
    assert pool.capacity == 80
    assert pool.claims.guarantee == (0.0, 0.0)  # the one node there now is spot: no guarantee stands on it


def test_karpenter_node_pool_limits_are_the_ceiling_and_win_over_the_policy() -> None:
    with in_process_emulator(clock=lambda: NOW) as handle:
        handle.emulator.create_cluster("c1", [("p5", P5, 2)])
        handle.emulator.set_autoscaling("c1")
        state = KubeState()
        # 96 GPUs or 1,000 vCPUs: the tighter is 5 nodes (192 vCPUs each); a NodePool without limits says nothing.
        state.add(node_pool("gpu", [P5], {"nvidia.com/gpu": 96, "cpu": 1000}), node_pool("any", [P5], {}))
        with serve(state) as (url, _):
            got = collect_snapshot("c1", AwsClients(region="us-east-1"), now=NOW,
                                   kube=KubeAccess(mode="url", url=url), metrics_window=None)
            state.errors["nodepools"] = 403
            denied = collect_snapshot("c1", AwsClients(region="us-east-1"), now=NOW,
                                      kube=KubeAccess(mode="url", url=url), metrics_window=None)
    assert got.snapshot.autoscaling_max_nodes == {P5: 5}
    [pool], _ = build_pools(got.snapshot, _policy(cluster={"autoscaling": {"max_nodes": {P5: 16}}}), NOW)
    assert pool.capacity == 40
    assert "autoscaler may add 3 nodes of ml.p5.48xlarge (up to 5, Karpenter NodePool limits)" in pool.notes[0]
    assert denied.snapshot.autoscaling_max_nodes == {}
    assert any(w.startswith("Karpenter NodePool limits not read: Kubernetes list nodepools.karpenter.sh: 403")
               for w in denied.warnings)


def test_set_group_fields_takes_only_fields_of_the_sdk_shape() -> None:
    with in_process_emulator() as handle:
        handle.emulator.create_cluster("c1", [("p5", P5, 1)])
        with pytest.raises(Exception, match="not a field of ClusterInstanceGroupDetails"):
            handle.emulator.set_group_fields("c1", "p5", SpotPrice=3)
        with pytest.raises(ClientError, match="not found"):
            handle.sagemaker.describe_training_plan(TrainingPlanName="nope")


def test_pending_work_asking_for_a_topology_level_is_warned_about_when_its_quota_is_raised() -> None:
    gang = pod_set(4, {"nvidia.com/gpu": 8}, P5)
    gang["topologyRequest"] = {"required": "topology.k8s.aws/network-node-layer-3"}
    with in_process_emulator(clock=lambda: NOW) as handle:
        handle.emulator.create_cluster("c1", [("p5", P5, 4)])
        state = KubeState()
        state.add(workload("a", "gang", [gang]), workload("b", "plain", [pod_set(1, {"nvidia.com/gpu": 8}, P5)]))
        with serve(state) as (url, _):
            got = collect_snapshot("c1", AwsClients(region="us-east-1"), now=NOW,
                                   kube=KubeAccess(mode="url", url=url), metrics_window=None)
    snap = got.snapshot
    assert snap.topology_pending == {"a": ("gang (required topology.k8s.aws/network-node-layer-3)",)}
    assert [(w.team, w.name, w.accelerators, w.pods, w.topology) for w in snap.pending_workloads] == [
        ("a", "gang", 32, 4, "required topology.k8s.aws/network-node-layer-3"), ("b", "plain", 8, 1, None)]
    plan = make_plan(snap, _policy(), NOW)
    assert {c.team for c in plan.changes if c.after > c.before} == {"a", "b"}
    assert [w for w in plan.warnings if "topology" in w] == [
        "a: the raise may not let 1 pending workload start: gang (required topology.k8s.aws/network-node-layer-3), "
        "asking for one topology domain, which more quota alone does not give"]


def test_collect_lists_each_pending_workload_and_gang_steps_plan_with_them() -> None:
    with in_process_emulator(clock=lambda: NOW) as handle:
        handle.emulator.create_cluster("c1", [("p5", P5, 4)])
        state = KubeState()
        state.add(workload("a", "pretrain", [pod_set(4, {"nvidia.com/gpu": 8}, P5)]),
                  *(workload("b", f"small-{k}", [pod_set(1, {"nvidia.com/gpu": 4}, P5)]) for k in range(8)))
        with serve(state) as (url, _):
            got = collect_snapshot("c1", AwsClients(region="us-east-1"), now=NOW,
                                   kube=KubeAccess(mode="url", url=url), metrics_window=None)
    snap = got.snapshot
    assert sorted((w.team, w.accelerators, w.pods) for w in snap.pending_workloads) == \
        [("a", 32, 4), *[("b", 4, 1)] * 8]
    # 32 GPUs, 16 each by weight: 16 starts nothing of a's 32-GPU gang, which is as far up as down: a gets it
    stepped = Policy.model_validate({"teams": {"a": {}, "b": {}}, "fairness": {"gang_steps": True},
                                     "stability": {"cooldown_minutes": 0, "max_move": None}})
    plan = make_plan(snap, stepped, NOW)
    assert {t: a[P5]["accelerators"] for t, a in plan.allocations.items()} == {"a": 32}
