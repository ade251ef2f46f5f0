"""What one namespace can put in front of collect: each Kueue Workload is read on its own, a malformed one is skipped
whole with one warning naming it (never a crash, never a cancelled demand), and the text and lists kept of a team
are bounded whatever its Workloads carry. The reader's logic over listed objects (`demand_of`); the same path through
the real `kubernetes` client is in tests/integration/adapters/test_kueue_reader.py."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from support.fuzz import JSON, fuzz, mutated, within_memory
from support.kube_api import cluster_queue, pod_set, workload
from support.props import properties

from rebalancer.adapters.kubernetes import kueue
from rebalancer.adapters.kubernetes.kueue import (
    LISTED_PER_POOL,
    NAME_MAX,
    TOPOLOGY_LISTED,
    TOPOLOGY_MAX,
    WARNING_MAX_BYTES,
    WARNINGS_MAX,
    demand_of,
)

P5 = "ml.p5.48xlarge"
QUEUES = [cluster_queue("a", {P5: {"nvidia.com/gpu": 64}}), cluster_queue("b", {P5: {"nvidia.com/gpu": 64}})]


def gpus(team: str, name: str, n: int | str, count: int = 1, **extra: Any) -> dict[str, Any]:
    return workload(team, name, [pod_set(count, {"nvidia.com/gpu": n, "cpu": "4"}, P5)], **extra)


def pending(got: kueue.KueueDemand, team: str = "a") -> float:
    return got.demand.get(team, {}).get(P5, kueue.Demand()).pending.accelerators


def test_a_negative_request_beside_a_positive_one_is_skipped_not_subtracted() -> None:
    got = demand_of(QUEUES, [gpus("a", "real", 8), gpus("a", "minus", -8)])
    assert pending(got) == 8
    assert got.skipped == 1
    assert got.warnings == ("Workload hyperpod-ns-a/minus: skipped, spec.podSets[0].containers[0] nvidia.com/gpu "
                            "request is negative: '-8'",)
    assert [w.name for w in got.workloads] == ["real"]


@pytest.mark.parametrize(("bad", "why"), [
    (gpus("a", "nan", "NaN"), "nvidia.com/gpu request is not a quantity: 'NaN'"),
    (gpus("a", "inf", "Infinity"), "nvidia.com/gpu request is not a quantity: 'Infinity'"),
    (gpus("a", "text", "eight"), "nvidia.com/gpu request is not a quantity: 'eight'"),
    (gpus("a", "huge", "1e12"), "spec.podSets asks for 1e+12 of nvidia.com/gpu, more than any quota can hold "
                                "(10,000,000)"),
    (gpus("a", "many", 8, count=2**31), "spec.podSets[0].count is not a count of pods (0 to 2147483647)"),
    (gpus("a", "minus-pods", 8, count=-1), "spec.podSets[0].count is not a count of pods"),
    (workload("a", "nine", [pod_set(1, {"nvidia.com/gpu": 1}, P5)] * 9), "spec.podSets has 9 entries, more than 8"),
    (workload("a", "x" * (NAME_MAX + 1), [pod_set(1, {"nvidia.com/gpu": 1}, P5)]),
     f"metadata.name is longer than {NAME_MAX} characters"),
    (workload("a", "Bad\x1b[2JName", [pod_set(1, {"nvidia.com/gpu": 1}, P5)]),
     "metadata.name is not a Kubernetes object name: 'Bad\\x1b[2JName'"),
    ({**workload("a", "specless", []), "spec": ["podSets"]}, "spec is not an object: ['podSets']"),
], ids=["NaN", "infinity", "not a quantity", "absurd", "int32 count", "negative count", "nine pod sets",
        "long name", "control characters", "spec a list"])
def test_a_malformed_workload_is_skipped_with_one_warning_naming_it(bad: dict[str, Any], why: str) -> None:
    got = demand_of(QUEUES, [gpus("a", "real", 8), bad])
    assert pending(got) == 8
    assert got.skipped == 1
    [warning] = got.warnings
    assert warning.startswith("Workload hyperpod-ns-a/")
    assert ": skipped, " in warning
    assert why in warning
    assert "\n" not in warning
    assert "\x1b" not in warning


def test_a_request_collect_does_not_read_is_not_parsed() -> None:
    """A resource collect does not use (ephemeral storage, a device plugin of another kind) is not read at all."""
    wl = workload("a", "w", [pod_set(1, {"nvidia.com/gpu": 8, "example.com/foo": "not-a-quantity",
                                         "ephemeral-storage": "-1"}, P5)])
    got = demand_of(QUEUES, [wl])
    assert (pending(got), got.skipped, got.warnings) == (8, 0, ())


def test_a_malformed_cluster_queue_status_keeps_its_team_and_skips_its_usage() -> None:
    cq = cluster_queue("a", {P5: {"nvidia.com/gpu": 64}}, reserved={P5: {"nvidia.com/gpu": -16}})
    got = demand_of([cq], [gpus("a", "w", 8)])
    assert got.teams == ("a",)
    assert got.demand["a"][P5].in_use.accelerators == 0
    assert pending(got) == 8
    assert got.warnings == ("ClusterQueue hyperpod-ns-a-clusterqueue: skipped, ml.p5.48xlarge nvidia.com/gpu total "
                            "is negative: '-16'",)


def test_an_unknown_mig_profile_is_ignored_not_made_a_pool() -> None:
    wl = workload("a", "w", [pod_set(1, {"nvidia.com/mig-" + "9g.999gb" * 1000: 1}, P5)])
    got = demand_of(QUEUES, [wl])
    assert got.demand == {}
    [warning] = got.warnings
    assert "is not a MIG profile of ml.p5.48xlarge; ignored" in warning
    assert len(warning.encode()) <= WARNING_MAX_BYTES


def test_hostile_annotations_are_read_only_where_used_and_cut() -> None:
    """A pod template may carry 256 KB of annotations; only the topology ones are read, cleaned and cut."""
    wl = gpus("a", "w", 8)
    template = wl["spec"]["podSets"][0]["template"]
    template["metadata"] = {"annotations": {
        "kueue.x-k8s.io/podset-required-topology": "\x1b[31mrack\u202e" + "r" * 300_000,
        **{f"example.com/junk-{i}": "j" * 10_000 for i in range(25)}}}
    wl["metadata"]["annotations"] = {"example.com/blob": "b" * 250_000}
    got = demand_of(QUEUES, [wl])
    [listed] = got.workloads
    assert listed.topology is not None
    assert listed.topology.startswith("podset-required-topology [31mrack")
    assert len(listed.topology) <= len("podset-required-topology ") + TOPOLOGY_MAX
    assert got.topology["a"] == (f"w ({listed.topology})",)
    assert "\x1b" not in listed.topology
    assert "\u202e" not in listed.topology


def test_a_namespace_with_thousands_of_workloads_is_listed_to_its_bound_and_counted_whole() -> None:
    many = [gpus("a", f"w{i:05d}", 1, created=f"2026-11-{1 + i % 28:02d}T00:00:00Z")
            for i in range(3 * LISTED_PER_POOL)]
    many += [workload("a", f"t{i:05d}", [{**pod_set(1, {"nvidia.com/gpu": 1}, P5),
                                          "topologyRequest": {"required": "rack"}}]) for i in range(40)]
    got = demand_of(QUEUES, [*many, gpus("b", "other", 2)])
    assert pending(got) == 3 * LISTED_PER_POOL + 40  # demand counts every workload
    listed = [w for w in got.workloads if w.team == "a"]
    assert len(listed) == LISTED_PER_POOL
    oldest = sorted((w for w in many if not w["metadata"]["name"].startswith("t")),
                    key=lambda w: (w["metadata"]["creationTimestamp"], w["metadata"]["name"]))
    assert {w.name for w in listed} == {w["metadata"]["name"] for w in oldest[:LISTED_PER_POOL]}
    assert [w.name for w in got.workloads if w.team == "b"] == ["other"]
    assert len(got.topology["a"]) == TOPOLOGY_LISTED
    assert got.topology_unlisted == {"a": 40 - TOPOLOGY_LISTED}
    assert any(w.startswith(f"a: {3 * LISTED_PER_POOL + 40} workloads pending on {P5}; the first "
                            f"{LISTED_PER_POOL} in admission order") for w in got.warnings)


def test_lists_over_the_total_bound_are_cut_to_the_same_count_per_team(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kueue, "LISTED_TOTAL", 50)
    workloads = [gpus(t, f"{t}-{i:03d}", 1) for t, n in (("a", 100), ("b", 20)) for i in range(n)]
    got = demand_of(QUEUES, workloads)
    per_team = {t: sum(w.team == t for w in got.workloads) for t in ("a", "b")}
    assert per_team == {"a": 30, "b": 20}  # the largest k with min(100, k) + min(20, k) <= 50


@properties(100)
@given(sizes=st.lists(st.integers(0, 500), max_size=30), total=st.integers(0, 5000))
def test_the_fair_count_is_the_largest_that_fits(sizes: list[int], total: int) -> None:
    k = kueue._fair_count(sizes, total)
    assert sum(min(n, k) for n in sizes) <= total or k == 0
    assert k == max(sizes, default=0) or sum(min(n, k + 1) for n in sizes) > total


def test_malformed_workloads_give_at_most_the_bound_of_warnings_and_a_count() -> None:
    got = demand_of(QUEUES, [gpus("a", f"bad-{i:04d}", -1) for i in range(1000)])
    assert got.skipped == 1000
    assert len(got.warnings) == WARNINGS_MAX
    assert got.warnings[-1] == f"… and {1000 - WARNINGS_MAX + 1} more Kueue warnings like these"


# --- properties over hostile input ---------------------------------------------------------------------------------

VALID = [gpus("a", "one", 8, count=2), workload("a", "two", [pod_set(3, {"nvidia.com/gpu": 4}, P5),
                                                            pod_set(1, {"cpu": "1"}, P5, name="launcher")])]
VALID_GPUS = 2 * 8 + 3 * 4


@fuzz(max_examples=120)
@given(hostile=st.lists(st.sampled_from(VALID).flatmap(mutated), min_size=1, max_size=4))
@within_memory()
def test_any_workload_with_one_value_replaced_neither_crashes_collect_nor_cancels_others(
        hostile: list[Any]) -> None:
    got = demand_of(QUEUES, [*VALID, *hostile])
    assert pending(got) >= VALID_GPUS  # the valid workloads' demand is all there
    for pools in got.demand.values():
        for d in pools.values():
            assert all(0 <= d.pending.get(r) < float("inf") for r in ("accelerators", "vcpu", "memory_gib"))
    assert len(got.warnings) <= WARNINGS_MAX
    assert all(len(w.encode()) <= WARNING_MAX_BYTES and "\n" not in w for w in got.warnings)


@fuzz(max_examples=80)
@given(objects=st.lists(JSON, max_size=6))
@within_memory()
def test_arbitrary_objects_among_the_workloads_are_never_raised_on(objects: list[Any]) -> None:
    """Anything an API server could be made to list (not a dict, a dict of anything) in a team's namespace."""
    placed = [{**o, "metadata": {"namespace": "hyperpod-ns-a", "name": f"x{i}"}} if isinstance(o, dict) else o
              for i, o in enumerate(objects)]
    got = demand_of([*QUEUES, *objects], [*VALID, *placed])
    assert pending(got) >= VALID_GPUS


NAMES = st.text(alphabet=st.characters(codec="utf-8"), max_size=2 * NAME_MAX)
LEVELS = st.text(max_size=2000)


@fuzz(max_examples=25)
@given(count=st.integers(0, LISTED_PER_POOL + 20), name=NAMES, level=LEVELS, requests=st.integers(-4, 2**40))
def test_what_is_kept_of_a_namespace_is_bounded_whatever_it_writes(count: int, name: str, level: str,
                                                                   requests: int) -> None:
    """Per team and pool at most LISTED_PER_POOL workloads and TOPOLOGY_LISTED topology lines are kept, each of
    bounded text: the size of what collect keeps of a team does not grow with what the team writes."""
    workloads = []
    for i in range(count):
        wl = workload("a", f"{name}{i}", [{**pod_set(1, {"nvidia.com/gpu": requests}, P5),
                                           "topologyRequest": {"required": level}}])
        workloads.append(wl)
    got = demand_of(QUEUES, workloads)
    assert len(got.workloads) <= LISTED_PER_POOL
    assert len(got.topology.get("a", ())) <= TOPOLOGY_LISTED
    kept = json.dumps([w.model_dump(mode="json") for w in got.workloads]) + json.dumps(got.topology)
    per_workload = 2 * (NAME_MAX + len("required ") + TOPOLOGY_MAX) + 300  # the name twice (its topology line)
    assert len(kept.encode()) <= (LISTED_PER_POOL + TOPOLOGY_LISTED) * per_workload * 4  # UTF-8: ≤ 4 bytes a char
    assert all(0 < w.accelerators <= 10_000_000 for w in got.workloads)
    named = sum(len(f"{name}{i}") <= NAME_MAX and bool(kueue.OBJECT_NAME.fullmatch(f"{name}{i}"))
                for i in range(count))
    counted = named if 0 <= requests <= 10_000_000 else 0
    assert pending(got) == counted * requests
    assert got.skipped == count - counted
