"""When each running Workload was admitted, as collect reads it: its Admitted condition's lastTransitionTime (the
QuotaReserved one's where Kueue has not set Admitted). A value that is not an RFC 3339 time with a zone is left out
with one warning naming the workload, the field and the value; the workload and its quota are read all the same."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from support.kube_api import cluster_queue, pod_set, workload

from rebalancer.adapters.kubernetes.kueue import demand_of

P5 = "ml.p5.48xlarge"
QUEUES = [cluster_queue("a", {P5: {"nvidia.com/gpu": 64}}, reserved={P5: {"nvidia.com/gpu": 8}})]


def running(name: str, admitted: Any = "2026-11-30T08:30:00Z") -> dict[str, Any]:
    return workload("a", name, [pod_set(1, {"nvidia.com/gpu": 8}, P5)], admitted_on=P5, admitted=admitted)


def test_each_running_workload_carries_when_it_was_admitted() -> None:
    got = demand_of(QUEUES, [running("old", "2026-11-29T23:00:00Z"), running("new", "2026-11-30T08:30:00+01:00")])
    assert {w.name: w.started for w in got.running} == {
        "old": datetime(2026, 11, 29, 23, tzinfo=UTC), "new": datetime(2026, 11, 30, 7, 30, tzinfo=UTC)}
    assert got.warnings == ()


def test_without_an_admitted_condition_the_quota_reservation_says_when() -> None:
    wl = running("w")
    wl["status"]["conditions"] = [c for c in wl["status"]["conditions"] if c["type"] != "Admitted"]
    wl["status"]["conditions"][0]["lastTransitionTime"] = "2026-11-30T06:00:00Z"
    [w] = demand_of(QUEUES, [wl]).running
    assert w.started == datetime(2026, 11, 30, 6, tzinfo=UTC)


@pytest.mark.parametrize("value", ["yesterday", "2026-11-30T08:30:00", 1764491400, "2026-11-30T08:30:00Z" * 4],
                         ids=["words", "no zone", "a number", "too long"])
def test_what_is_not_a_time_is_left_out_with_a_warning_and_the_workload_still_runs(value: Any) -> None:
    got = demand_of(QUEUES, [running("w", value), running("fine")])
    assert {w.name: w.started for w in got.running} == {"w": None, "fine": datetime(2026, 11, 30, 8, 30, tzinfo=UTC)}
    assert got.skipped == 0
    [warning] = got.warnings
    assert warning.startswith("Workload hyperpod-ns-a/w: status.conditions[type=Admitted].lastTransitionTime ")
    assert repr(value)[:20] in warning
    assert "is not a time" in warning


def test_a_condition_that_does_not_hold_says_nothing() -> None:
    wl = running("w")
    for c in wl["status"]["conditions"]:
        c["status"] = "False"
    [w] = demand_of(QUEUES, [wl]).running
    assert w.started is None


def test_each_running_workload_carries_its_priority_and_one_that_is_not_an_int32_is_left_out_with_a_warning() -> None:
    low, odd = running("low"), running("odd")
    low["spec"]["priority"] = -5
    odd["spec"]["priority"] = 2**31
    got = demand_of(QUEUES, [running("w"), low, odd])
    assert {w.name: w.priority for w in got.running} == {"w": 100, "low": -5, "odd": None}
    assert got.warnings == ("Workload hyperpod-ns-a/odd: spec.priority 2147483648 is not a whole number from "
                            "-2147483648 to 2147483647: left out, the reclaim leaves its team's work there to Kueue",)
