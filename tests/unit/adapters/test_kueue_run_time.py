"""What a Workload says of its run time, as collect reads it: the run time it declares (Kueue's
kueue.x-k8s.io/estimated-duration annotation, a Go duration) and the longest Kueue lets it run
(spec.maximumExecutionTimeSeconds). One that is not what Kueue allows is left out with one warning naming the field
and the value; the workload and its quota demand are read all the same."""

from __future__ import annotations

from typing import Any

import pytest
from support.kube_api import cluster_queue, pod_set, workload

from rebalancer.adapters.kubernetes.kueue import demand_of
from rebalancer.forecast.estimate import HORIZON_S

P5 = "ml.p5.48xlarge"
QUEUES = [cluster_queue("a", {P5: {"nvidia.com/gpu": 64}})]


def gpus(name: str, *, admitted: bool = False, **says: Any) -> dict[str, Any]:
    return workload("a", name, [pod_set(1, {"nvidia.com/gpu": 8}, P5)], admitted_on=P5 if admitted else None,
                    **says)


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
    # what Go refuses: digits of another script (str.isdigit() takes them), a value past int64 nanoseconds
    ({"estimated_duration": "\u0664h"}, "'\u0664h' is not a duration"),
    ({"estimated_duration": "\uff14h"}, "is not a duration"),
    ({"estimated_duration": "2562048h"}, "'2562048h' is not a duration"),
    ({"estimated_duration": "9223372036854775808ns"}, "is not a duration"),
], ids=["words", "negative", "zero limit", "int32 limit", "text limit", "arabic-indic digit", "fullwidth digit",
        "past go's range", "one ns past go's range"])
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


@pytest.mark.parametrize(("declared", "limit", "taken"), [
    ("2562047h", 36_000, 36_000),  # Go's largest hour count, behind a 10 h limit: the limit
    ("2562047h", None, HORIZON_S),  # without a limit: the forecast's horizon, not 292 years
    ("4h", 36_000, 14_400),  # within both: as declared
    ("20h", 36_000, 36_000),
])
def test_a_declaration_is_never_taken_beyond_the_workloads_limit_or_the_forecasts_horizon(
        declared: str, limit: int | None, taken: float) -> None:
    got = demand_of(QUEUES, [gpus("w", estimated_duration=declared, max_execution_s=limit)])
    [w] = got.workloads
    assert (w.declared_s, w.limit_s) == (taken, limit)
    assert got.warnings == ()
