"""What counts as capacity (rebalancer.planning.capacity): HyperPod's node health, nodes it is working on, spot
and training-plan capacity, operations in progress, and autoscaled clusters, through the real planner."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from support.clusters import T0, policy, quota_sum, snapshot
from support.props import properties

from rebalancer.domain.snapshot import Snapshot
from rebalancer.planning.capacity import of_snapshot
from rebalancer.planning.context import planning_context
from rebalancer.planning.planner import make_plan
from rebalancer.planning.pools import build_pools

P5 = "ml.p5.48xlarge"
PLAN_ARN = "arn:aws:sagemaker:us-east-1:123456789012:training-plan/p5-reserved"


def _with(snap: Snapshot, *, nodes: dict[int, dict[str, Any]] | None = None, group: dict[str, Any] | None = None,
          cluster: dict[str, Any] | None = None, **fields: Any) -> Snapshot:
    """The snapshot with node i's fields, the first group's and the cluster's replaced, and snapshot fields set."""
    data = snap.model_dump(mode="json", exclude_none=True)
    for i, changes in (nodes or {}).items():
        data["nodes"][i].update(changes)
    data["cluster"]["InstanceGroups"][0].update(group or {})
    data["cluster"].update(cluster or {})
    data.update(fields)
    return Snapshot.model_validate(data)


def _pool(snap: Snapshot, pol: Any) -> Any:
    pools, _ = build_pools(snap, pol, T0)
    return next(p for p in pools if p.key == P5)


def _reasons(plan: Any) -> str:
    return " | ".join(c.reason for c in plan.changes)


BUSY = {"a": {P5: 32}, "b": {P5: 32}}  # two teams holding all 8 nodes, each wanting more than it has
TWO_TEAMS = policy({"a": {}, "b": {}})


NO_REPAIR_GRACE = policy({"a": {}, "b": {}}, capacity={"repair_grace_minutes": 0})


def test_without_a_repair_grace_a_running_node_hyperpod_labels_for_replacement_is_no_capacity() -> None:
    snap = _with(snapshot({P5: 8}, quotas=BUSY, pending={"a": {P5: 64}, "b": {P5: 64}}),
                 node_health={"i-00000000": "UnschedulablePendingReplacement", "i-00000001": "Schedulable"})
    assert _pool(snap, NO_REPAIR_GRACE).capacity == 56
    assert _pool(snap, REPAIR).capacity == 64  # a grace counts it on its first sighting
    plan = make_plan(snap, NO_REPAIR_GRACE, T0)
    assert "1 node of ml.p5.48xlarge labelled UnschedulablePendingReplacement" in _reasons(plan)
    assert quota_sum(snap, P5) - sum(c.before - c.after for c in plan.changes) == 56


REPAIR = policy({"a": {}, "b": {}}, capacity={"repair_grace_minutes": 30})


def test_a_node_under_repair_counts_for_the_repair_grace_from_the_first_run_that_saw_it() -> None:
    """A failure HyperPod repairs: within `capacity.repair_grace_minutes` of the first sighting quotas stay (no cut
    to grow back after the repair); just past it the node is lost and the reason says since when."""
    first = _with(snapshot({P5: 8}, quotas=BUSY, in_use={"a": {P5: 32}, "b": {P5: 32}}),
                  node_health={"i-00000000": "UnschedulablePendingReboot"})
    seen = planning_context(first, REPAIR).unavailable_since
    assert seen == {"i-00000000": ("labelled UnschedulablePendingReboot", T0)}
    assert "1 node of ml.p5.48xlarge under repair (labelled UnschedulablePendingReboot), counted for up to 30 min" \
        in _pool(first, REPAIR).notes
    at_grace = _at(first, 30)
    ctx = planning_context(at_grace, REPAIR, unavailable_seen=seen)
    assert make_plan(at_grace, REPAIR, at_grace.taken_at, context=ctx).changes == ()
    past = _at(first, 31)
    ctx = planning_context(past, REPAIR, unavailable_seen=ctx.unavailable_since)
    plan = make_plan(past, REPAIR, past.taken_at, context=ctx)
    assert sum(c.before - c.after for c in plan.changes) == 8
    assert ("node i-00000000 labelled UnschedulablePendingReboot since 12:00, past the 30 min repair grace"
            in _reasons(plan))
    # With no repair grace the same node is lost at once.
    assert _pool(first, NO_REPAIR_GRACE).capacity == 56


def test_a_deep_health_check_within_the_grace_period_shrinks_nothing() -> None:
    snap = _with(snapshot({P5: 8}, quotas=BUSY, in_use={"a": {P5: 32}, "b": {P5: 32}}),
                 nodes={0: {"InstanceStatus": {"Status": "DeepHealthCheckInProgress"}}},
                 node_health={"i-00000001": "Unschedulable"})
    pool = _pool(snap, TWO_TEAMS)
    assert pool.capacity == 64
    assert "2 nodes of ml.p5.48xlarge" not in " ".join(pool.notes)
    assert sorted(pool.notes) == [
        "1 node of ml.p5.48xlarge unavailable for now (DeepHealthCheckInProgress), counted for up to 60 min",
        "1 node of ml.p5.48xlarge unavailable for now (labelled Unschedulable), counted for up to 60 min"]
    assert make_plan(snap, TWO_TEAMS, T0).changes == ()


def test_a_deep_health_check_past_the_grace_period_is_lost_and_the_reason_names_it() -> None:
    op = {"OperationId": "op-1", "Type": "DeepHealthCheck", "Status": "InProgress",
          "CreationTime": (T0 - timedelta(minutes=90)).isoformat(), "InstanceIds": ["i-00000000"]}
    snap = _with(snapshot({P5: 8}, quotas=BUSY), nodes={0: {"InstanceStatus": {"Status": "DeepHealthCheckInProgress"}}},
                 operations=[op])
    pol = policy({"a": {}, "b": {}}, capacity={"unavailable_grace_minutes": 60})
    assert _pool(snap, pol).capacity == 56
    assert "node i-00000000 in DeepHealthCheckInProgress since 10:30, past the 60 min grace" in _reasons(
        make_plan(snap, pol, T0))
    shorter = policy({"a": {}, "b": {}}, capacity={"unavailable_grace_minutes": 120})
    assert _pool(snap, shorter).capacity == 64


def test_spot_capacity_carries_no_guarantee_unless_the_policy_says_so() -> None:
    snap = _with(snapshot({P5: 8}), group={"CapacityRequirements": {"Spot": {}}})
    pol = policy({"a": {"guarantee": {P5: 40}}, "b": {}})
    pool = _pool(snap, pol)
    assert pool.capacity == 64  # spot is still shared by weight
    assert pool.claims.guarantee == (0.0, 0.0)
    assert "8 nodes of ml.p5.48xlarge on spot: shared by weight, no guarantee stands on them" in pool.notes
    on_spot = policy({"a": {"guarantee": {P5: 40}}, "b": {}}, capacity={"guarantees_on_spot": True})
    assert _pool(snap, on_spot).claims.guarantee == (40.0, 0.0)


def test_a_training_plan_ending_before_the_next_run_is_taken_away_ahead() -> None:
    plan = {"TrainingPlanArn": PLAN_ARN, "TrainingPlanName": "p5-reserved",
            "EndTime": (T0 + timedelta(minutes=10)).isoformat()}
    snap = _with(snapshot({P5: 8}, quotas=BUSY), group={"TrainingPlanArn": PLAN_ARN},
                 training_plans={PLAN_ARN: plan})
    assert _pool(snap, TWO_TEAMS).capacity == 0
    reasons = _reasons(make_plan(snap, TWO_TEAMS, T0))
    assert "taken away ahead: training plan p5-reserved ends 2026-" in reasons
    later = _with(snap, training_plans={PLAN_ARN: {**plan, "EndTime": (T0 + timedelta(hours=2)).isoformat()}})
    assert _pool(later, TWO_TEAMS).capacity == 64


def test_while_a_group_scales_its_type_is_not_shrunk_below_the_quotas() -> None:
    base = snapshot({P5: (6, 2)}, quotas=BUSY, in_use={"a": {P5: 32}, "b": {P5: 32}})
    pending = {6: {"InstanceStatus": {"Status": "Pending"}}, 7: {"InstanceStatus": {"Status": "Pending"}}}
    scaling = _with(base, nodes=pending, group={"ActiveOperations": {"Scaling": 1}, "TargetCount": 8})
    assert _pool(scaling, TWO_TEAMS).capacity == 64
    assert make_plan(scaling, TWO_TEAMS, T0).changes == ()
    assert "Scaling on group group0 in progress" in " ".join(_pool(scaling, TWO_TEAMS).notes)
    idle = _with(base, nodes=pending)
    assert _pool(idle, TWO_TEAMS).capacity == 48


AUTOSCALED = {"AutoScaling": {"Mode": "Enable", "AutoScalerType": "Karpenter", "Status": "InService"}}


def test_an_autoscaled_cluster_gets_quota_up_to_the_ceiling_and_guarantees_within_what_exists() -> None:
    snap = _with(snapshot({P5: 8}, quotas=BUSY, pending={"a": {P5: 100}, "b": {P5: 100}}), cluster=AUTOSCALED)
    pol = policy({"a": {"guarantee": {P5: 60}}, "b": {"guarantee": {P5: 60}}},
                 cluster={"autoscaling": {"max_nodes": {P5: 16}}})
    pool = _pool(snap, pol)
    assert pool.capacity == 128
    assert sum(pool.claims.guarantee) == 64  # scaled into the 8 nodes there now
    plan = make_plan(snap, pol, T0)
    assert "autoscaler may add 8 nodes of ml.p5.48xlarge (up to 16, the policy's cluster.autoscaling.max_nodes)" \
        in _reasons(plan)
    assert plan.scheduler_requests == ()  # an autoscaling section alone manages no scheduler config
    assert sum(a[P5]["accelerators"] for a in plan.allocations.values()) == 128


def test_limits_read_from_the_cluster_win_over_the_policy() -> None:
    snap = _with(snapshot({P5: 8}), cluster=AUTOSCALED, autoscaling_max_nodes={P5: 10})
    pol = policy({"a": {}}, cluster={"autoscaling": {"max_nodes": {P5: 16}}})
    assert _pool(snap, pol).capacity == 80
    assert "Karpenter NodePool limits" in " ".join(_pool(snap, pol).notes)


def test_without_autoscaling_on_the_ceiling_is_ignored() -> None:
    snap = snapshot({P5: 8}, pending={"a": {P5: 100}})
    pol = policy({"a": {}}, cluster={"autoscaling": {"max_nodes": {P5: 16}}})
    assert _pool(snap, pol).capacity == 64


@properties(50)
@given(now=st.integers(0, 12), ceiling=st.integers(0, 24), spot=st.booleans(),
       guarantees=st.lists(st.integers(0, 100), min_size=1, max_size=4),
       demand=st.lists(st.integers(0, 200), min_size=4, max_size=4))
def test_quotas_stay_within_reach_and_guarantees_within_what_lasts(now: int, ceiling: int, spot: bool,
                                                                   guarantees: list[int], demand: list[int]) -> None:
    teams = [f"t{i}" for i in range(len(guarantees))]
    snap = _with(snapshot({P5: now}, pending={t: {P5: d} for t, d in zip(teams, demand, strict=False)}),
                 cluster=AUTOSCALED, group={"CapacityRequirements": {"Spot": {}}} if spot else {},
                 autoscaling_max_nodes={P5: ceiling})
    pol = policy({t: {"guarantee": {P5: g}} for t, g in zip(teams, guarantees, strict=True)})
    cap = of_snapshot(snap, pol).of(P5)
    pool = _pool(snap, pol) if now or ceiling else None
    if pool is None:
        return
    assert pool.capacity == max(now, ceiling) * 8
    lasting = 0 if spot else now * 8
    # Where every unit lasts, the engine scales guarantees into the pool itself; elsewhere they come scaled.
    assert lasting >= pool.capacity or sum(pool.claims.guarantee) <= lasting + 1e-9
    plan = make_plan(snap, pol, T0)
    assert sum(a.get(P5, {}).get("accelerators", 0) for a in plan.allocations.values()) <= max(now, ceiling) * 8
    assert cap.lasting <= cap.now <= cap.reachable


DHC = {"InstanceStatus": {"Status": "DeepHealthCheckInProgress"}}
GRACE = policy({"a": {}, "b": {}}, capacity={"unavailable_grace_minutes": 60})


def _at(snap: Snapshot, minutes: float) -> Snapshot:
    return snap.model_copy(update={"taken_at": T0 + timedelta(minutes=minutes)})


def test_a_node_seen_unavailable_run_after_run_loses_its_grace_when_the_first_sighting_is_an_hour_old() -> None:
    """No operation says when the check began: the runs' own first sighting, carried by the planning context
    from one run to the next (the caller keeps `unavailable_since`), is where the grace starts."""
    first = _with(snapshot({P5: 8}, quotas=BUSY, in_use={"a": {P5: 32}, "b": {P5: 32}}), nodes={0: DHC})
    seen = planning_context(first, GRACE).unavailable_since
    assert seen == {"i-00000000": ("DeepHealthCheckInProgress", T0)}
    within = _at(first, 60)
    ctx = planning_context(within, GRACE, unavailable_seen=seen)
    assert ctx.unavailable_since == seen  # the first sighting is kept, not the latest
    assert make_plan(within, GRACE, within.taken_at, context=ctx).changes == ()
    past = _at(first, 61)
    ctx = planning_context(past, GRACE, unavailable_seen=ctx.unavailable_since)
    plan = make_plan(past, GRACE, past.taken_at, context=ctx)
    assert sum(c.before - c.after for c in plan.changes) == 8
    assert "node i-00000000 in DeepHealthCheckInProgress since 12:00, past the 60 min grace" in _reasons(plan)
    # Without what the earlier runs saw, the same snapshot is the first sighting: nothing shrinks.
    assert make_plan(past, GRACE, past.taken_at, context=planning_context(past, GRACE)).changes == ()


def test_a_node_whose_state_changes_or_that_comes_back_starts_its_grace_again() -> None:
    snap = _at(_with(snapshot({P5: 8}, quotas=BUSY), nodes={0: {"InstanceStatus": {"Status": "SystemUpdating"}}}), 90)
    earlier = {"i-00000000": ("DeepHealthCheckInProgress", T0), "i-00000005": ("SystemUpdating", T0)}
    ctx = planning_context(snap, GRACE, unavailable_seen=earlier)
    assert ctx.unavailable_since == {"i-00000000": ("SystemUpdating", snap.taken_at)}  # node 5 is Running again
    assert _pool(snap, GRACE).capacity == 64
    future = {"i-00000000": ("SystemUpdating", snap.taken_at + timedelta(hours=2))}  # a clock that went back
    assert planning_context(snap, GRACE, unavailable_seen=future).unavailable_since == ctx.unavailable_since


def test_the_earlier_of_the_operation_start_and_the_first_sighting_counts() -> None:
    op = {"OperationId": "op-1", "Type": "DeepHealthCheck", "Status": "InProgress",
          "CreationTime": (T0 - timedelta(minutes=30)).isoformat(), "InstanceIds": ["i-00000000"]}
    snap = _with(snapshot({P5: 8}, quotas=BUSY), nodes={0: DHC}, operations=[op])
    seen = {"i-00000000": ("DeepHealthCheckInProgress", T0 - timedelta(minutes=70))}
    assert of_snapshot(snap, GRACE).of(P5).now == 8
    cap = of_snapshot(snap, GRACE, {n: t for n, (_, t) in seen.items()}).of(P5)
    assert (cap.now, cap.unhealthy) == (7, 1)
    assert "node i-00000000 in DeepHealthCheckInProgress since 10:50, past the 60 min grace" in cap.notes


def test_a_scaling_operation_holds_its_type_up_to_the_desired_target_it_names() -> None:
    """DescribeClusterOperation's ScalingDetails[].Desired.TargetCount: the quotas of a group growing from 8 to 12
    while 4 nodes are gone for a replacement are not shrunk."""
    op = {"OperationId": "op-2", "Type": "Scaling", "Status": "InProgress", "InstanceGroupNames": ["g0"],
          "TargetCounts": {"g0": 12}}
    big = {"a": {P5: 48}, "b": {P5: 48}}
    snap = _with(snapshot({P5: 8}, quotas=big), group={"InstanceGroupName": "g0", "TargetCount": 8},
                 operations=[op])
    assert of_snapshot(snap, TWO_TEAMS).of(P5).held_amount == 96
    without = _with(snapshot({P5: 8}, quotas=big), group={"InstanceGroupName": "g0", "TargetCount": 8},
                    operations=[{**op, "TargetCounts": {}}])
    assert of_snapshot(without, TWO_TEAMS).of(P5).held_amount == 64


STATUSES = ["Running", "SystemUpdating", "DeepHealthCheckInProgress", "Failure", "Pending"]
LABELS = [None, "Schedulable", "Unschedulable", "UnschedulablePendingReplacement", "UnschedulablePendingReboot",
          "UnschedulableOther"]
GRACES = policy({"a": {}, "b": {}}, capacity={"unavailable_grace_minutes": 60, "repair_grace_minutes": 30})


@properties(30)
@given(nodes=st.lists(st.tuples(st.sampled_from(STATUSES), st.sampled_from(LABELS),
                                st.one_of(st.none(), st.integers(0, 120))), min_size=1, max_size=12),
       spot=st.booleans())
def test_nodes_counted_together_count_as_each_counted_alone(nodes: list[tuple[str, str | None, int | None]],
                                                            spot: bool) -> None:
    """Nodes alike are counted once per kind (rebalancer.planning.capacity._count_nodes): the totals and the lines
    for nodes past their grace are those of each node counted on its own, in the snapshot's order."""
    snap = _with(snapshot({P5: len(nodes)}), nodes={i: {"InstanceStatus": {"Status": s}} for i, (s, _, _) in
                                                    enumerate(nodes)},
                 group={"CapacityRequirements": {"Spot": {}}} if spot else {},
                 node_health={f"i-{i:08d}": label for i, (_, label, _) in enumerate(nodes) if label is not None})
    seen = {f"i-{i:08d}": T0 - timedelta(minutes=m) for i, (_, _, m) in enumerate(nodes) if m is not None}
    whole = of_snapshot(snap, GRACES, seen).of(P5)
    alone = [of_snapshot(snap.model_copy(update={"nodes": (n,)}), GRACES, seen).of(P5) for n in snap.nodes]
    assert (whole.now, whole.lasting, whole.unhealthy) == (sum(c.now for c in alone), sum(c.lasting for c in alone),
                                                           sum(c.unhealthy for c in alone))
    assert [n for n in whole.notes if n.startswith("node ")] == [n for c in alone for n in c.notes
                                                                 if n.startswith("node ")]
