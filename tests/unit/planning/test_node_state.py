"""The one definition of a healthy node (rebalancer.domain.healthy.node_state and counts), which the planner and the
quota writer's capacity guard both call: what a node is from its status and label, how long a grace lasts (just
inside counts, just past does not, a grace of 0 counts nothing), and that the guard, which reads no label and no
first sighting, never counts less than the planner may."""

from __future__ import annotations

from datetime import timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st
from support.props import properties

from rebalancer.domain.healthy import COUNTED_STATUSES, counts, healthy_capacity, node_state

P5 = "ml.p5.48xlarge"
HOUR, HALF = timedelta(minutes=60), timedelta(minutes=30)
STATUSES = ("Running", "Failure", "Pending", "ShuttingDown", "SystemUpdating", "DeepHealthCheckInProgress",
            "NotFound", "AttachInProgress", "DetachInProgress", None)
LABELS = (None, "Schedulable", "Unschedulable", "UnschedulablePendingReplacement", "UnschedulablePendingReboot")


@pytest.mark.parametrize(("status", "label", "kind", "what"), [
    ("Running", None, "schedulable", ""),
    ("Running", "Schedulable", "schedulable", ""),
    ("Running", "UnschedulablePendingReplacement", "repair", "labelled UnschedulablePendingReplacement"),
    ("Running", "UnschedulablePendingReboot", "repair", "labelled UnschedulablePendingReboot"),
    ("DeepHealthCheckInProgress", "UnschedulablePendingReboot", "repair", "labelled UnschedulablePendingReboot"),
    ("Running", "Unschedulable", "for now", "labelled Unschedulable"),
    ("SystemUpdating", None, "for now", "SystemUpdating"),
    ("Failure", "UnschedulablePendingReplacement", "lost", "unhealthy"),  # the instance itself failed
    ("Failure", None, "lost", "unhealthy"),
    ("Pending", None, "lost", "unhealthy"),
])
def test_what_a_node_is(status: str, label: str | None, kind: str, what: str) -> None:
    state = node_state(status, label)
    assert (state.kind, state.what) == (kind, what)


def test_a_node_under_repair_counts_just_inside_its_grace_and_not_just_past() -> None:
    repair = node_state("Running", "UnschedulablePendingReplacement")
    assert counts(repair, HALF, HOUR, HALF)  # at the grace exactly
    assert counts(repair, HALF - timedelta(seconds=1), HOUR, HALF)
    assert not counts(repair, HALF + timedelta(seconds=1), HOUR, HALF)
    assert counts(repair, None, HOUR, HALF)  # a start not known is recent
    # each state has its own grace: the repair grace is not the grace of a node HyperPod merely works on
    for_now = node_state("SystemUpdating", None)
    assert counts(for_now, HALF + timedelta(seconds=1), HOUR, HALF)
    assert not counts(for_now, HOUR + timedelta(seconds=1), HOUR, HALF)


def test_a_grace_of_zero_counts_nothing_and_schedulable_or_lost_nodes_need_no_time() -> None:
    repair = node_state("Running", "UnschedulablePendingReboot")
    assert not counts(repair, timedelta(0), HOUR, timedelta(0))
    assert not counts(repair, None, HOUR, timedelta(0))
    assert counts(node_state("Running", None), timedelta(days=9), timedelta(0), timedelta(0))
    assert not counts(node_state("Failure", None), None, HOUR, HOUR)


@given(st.sampled_from(STATUSES), st.sampled_from(LABELS),
       st.none() | st.integers(0, 3000).map(lambda m: timedelta(minutes=m)),
       st.integers(0, 1440), st.integers(0, 1440))
@properties(200)
def test_the_guard_counts_every_node_the_planner_may_count(status: str | None, label: str | None,
                                                           elapsed: timedelta | None, unavailable: int,
                                                           repair: int) -> None:
    """The guard reads the status alone: a plan that counted a node (by its label, within a grace) is never
    refused at the write for it."""
    planner = counts(node_state(status, label), elapsed, timedelta(minutes=unavailable), timedelta(minutes=repair))
    guard = healthy_capacity([(P5, str(status))]).get(P5, 0.0) > 0
    assert guard or not planner
    assert guard == (status in COUNTED_STATUSES)

