"""What a Workload says of its run time, as collect reads it: the run time it declares (Kueue's
kueue.x-k8s.io/estimated-duration annotation, a Go duration) and the longest Kueue lets it run
(spec.maximumExecutionTimeSeconds). One that is not what Kueue allows is left out with one warning naming the field
and the value; the workload and its quota demand are read all the same."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from support.kube_api import cluster_queue, pod_set, workload
from support.props import properties

from rebalancer.adapters.kubernetes.kueue import demand_of
from rebalancer.adapters.kubernetes.run_time import go_duration

P5 = "ml.p5.48xlarge"
QUEUES = [cluster_queue("a", {P5: {"nvidia.com/gpu": 64}})]


def gpus(name: str, *, admitted: bool = False, **says: Any) -> dict[str, Any]:
    return workload("a", name, [pod_set(1, {"nvidia.com/gpu": 8}, P5)], admitted_on=P5 if admitted else None,
                    **says)


@pytest.mark.parametrize(("text", "seconds"), [
    ("4h", 4 * 3600), ("1h30m", 5400), ("90m", 5400), ("1.5h", 5400), ("300s", 300), ("2h45m30s", 9930),
    ("500ms", 0.5), (".5h", 1800), ("+1h", 3600), ("1h0m0s", 3600), ("10us", 1e-5), ("10µs", 1e-5),
])
def test_a_go_duration_is_read_as_go_reads_it(text: str, seconds: float) -> None:
    assert go_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "4", "0s", "0", "-1h", "+", "+-1h", "4 h", "4hours", "1d", "h", "1h ", "1e3s",
                                  "4H", "1." * 40 + "h"])
def test_what_go_would_refuse_or_is_not_a_positive_duration_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="duration"):
        go_duration(text)


def test_a_pending_and_a_running_workload_carry_what_they_declare_and_their_limit() -> None:
    got = demand_of(QUEUES, [gpus("waits", estimated_duration="4h", max_execution_s=36_000),
                             gpus("runs", admitted=True, estimated_duration="90m"), gpus("silent")])
    assert {w.name: (w.declared_s, w.limit_s) for w in got.workloads} == {"waits": (14_400, 36_000),
                                                                          "silent": (None, None)}
    assert [(w.name, w.declared_s, w.limit_s) for w in got.running] == [("runs", 5_400, None)]
    assert got.warnings == ()


@pytest.mark.parametrize(("says", "why"), [
    ({"estimated_duration": "4 hours"}, "metadata.annotations[kueue.x-k8s.io/estimated-duration] '4 hours' is not "
                                        "a duration (a Go duration such as 4h or 1h30m)"),
    ({"estimated_duration": "-2h"}, "'-2h' is not a duration"),
    ({"max_execution_s": 0}, "spec.maximumExecutionTimeSeconds 0 is not a whole number of seconds from 1 to "
                             "2147483647: left out"),
    ({"max_execution_s": 2**31}, "spec.maximumExecutionTimeSeconds 2147483648 is not a whole number"),
    ({"max_execution_s": "3600"}, "spec.maximumExecutionTimeSeconds '3600' is not a whole number"),
], ids=["words", "negative", "zero limit", "int32 limit", "text limit"])
def test_what_is_not_a_run_time_is_left_out_with_a_warning_and_the_workload_still_counts(
        says: dict[str, Any], why: str) -> None:
    got = demand_of(QUEUES, [gpus("w", **says)])
    [w] = got.workloads
    assert (w.declared_s, w.limit_s) == (None, None)
    assert got.skipped == 0
    assert got.demand["a"][P5].pending.accelerators == 8
    [warning] = got.warnings
    assert warning.startswith("Workload hyperpod-ns-a/w: ")
    assert why in warning


def test_an_annotation_that_is_not_text_is_left_out_with_a_warning() -> None:
    wl = gpus("w")
    wl["metadata"]["annotations"] = {"kueue.x-k8s.io/estimated-duration": 14400}
    got = demand_of(QUEUES, [wl])
    assert got.workloads[0].declared_s is None
    assert "14400 is not a duration" in got.warnings[0]


@properties(80)
@given(st.integers(0, 10**6), st.integers(0, 59), st.integers(0, 59))
def test_hours_minutes_and_seconds_add_up(h: int, m: int, s: int) -> None:
    text = f"{h}h{m}m{s}s"
    if h == m == s == 0:
        with pytest.raises(ValueError, match="positive"):
            go_duration(text)
    else:
        assert go_duration(text) == h * 3600 + m * 60 + s
