"""Ten times the largest cluster the benchmarks plan (support.large_cluster at 10,000 teams x 15 types, 222,500
nodes, every team with a quota on every type and demand on most), with hostile tenants in its Kueue: one namespace
with 30,000 pending Workloads of random 253-character names, some carrying 300 KB annotations; 500 namespaces with
random topology levels; malformed Workloads of every kind. Through the real collect and plan steps on the template's
table (moto): every DynamoDB item stays within 75 % of its 400 KB and what the steps hand Step Functions within 75 %
of its 256 KB, by construction (collect bounds what a namespace keeps; the store splits what compression does not
bring under an item; the state carries counts and bounded lines), and the snapshot and plan read back whole."""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws
from support.item_size import ITEM_LIMIT, every_item, item_size
from support.kube_api import cluster_queue, pod_set, workload
from support.large_cluster import NOW, instance_types, synthetic
from support.template import create_table

from rebalancer.adapters.dynamodb.store import Store
from rebalancer.adapters.kubernetes.kueue import LISTED_TOTAL, demand_of
from rebalancer.app.workflow.run_plan import decide
from rebalancer.app.workflow.state import PlanResult, RunRef
from rebalancer.app.workflow.steps.collect import collect
from rebalancer.app.workflow.steps.plan import plan
from rebalancer.domain.plan import Plan

pytestmark = pytest.mark.slow

TEAMS = 10_000
STATE_LIMIT = 256 * 1024
MARGIN = 0.75
P5 = "ml.p5.48xlarge"


def hostile_workloads(rnd: random.Random) -> list[dict[str, Any]]:
    def text(n: int) -> str:  # random lowercase hex: a valid Kubernetes name, and text gzip halves at best
        return rnd.randbytes(n // 2 + 1).hex()[:n]

    def name() -> str:
        return "w" + text(252)

    flood = []
    for i in range(30_000):
        wl = workload("team-0001", name(), [pod_set(1, {"nvidia.com/gpu": 8}, P5)], created="2026-11-30T00:00:00Z")
        if i % 1500 == 0:
            wl["metadata"]["annotations"] = {"example.com/blob": text(300_000)}
            wl["spec"]["podSets"][0]["template"]["metadata"] = {"annotations": {
                "kueue.x-k8s.io/podset-required-topology": text(300_000)}}
        flood.append(wl)
    levels = []
    for t in range(2, 502):
        for _ in range(20):
            ps = {**pod_set(2, {"nvidia.com/gpu": 8}, P5),
                  "topologyRequest": {"required": text(400)}}
            levels.append(workload(f"team-{t:04d}", name(), [ps]))
    malformed = [workload("team-0001", f"bad-{i}", [pod_set(1, {"nvidia.com/gpu": q}, P5)])
                 for i, q in enumerate(["-8", "NaN", "1e30", "Infinity", "eight"] * 200)]
    return [*flood, *levels, *malformed]


@pytest.fixture
def store() -> Iterator[Store]:
    with mock_aws():
        create_table(boto3.client("dynamodb", region_name="us-east-1"))
        yield Store("t", resource=boto3.resource("dynamodb", region_name="us-east-1"), now=lambda: NOW)


def test_ten_times_the_largest_cluster_with_hostile_tenants_fits_every_item_and_state(
        store: Store, capsys: pytest.CaptureFixture[str]) -> None:
    types = instance_types()
    snap, pol = synthetic(TEAMS, types)
    teams = [f"team-{t:04d}" for t in range(1, 502)]
    kueue = demand_of([cluster_queue(t, {P5: {"nvidia.com/gpu": 64}}) for t in teams],
                      hostile_workloads(random.Random(31)))
    assert kueue.skipped == 1000
    assert len(kueue.workloads) <= LISTED_TOTAL
    snap = snap.model_copy(update={"pending_workloads": kueue.workloads, "topology_pending": kueue.topology,
                                   "topology_unlisted": kueue.topology_unlisted})
    run = RunRef(cluster_name="bench", execution_name="bench-20261130T120000",
                 execution_arn="arn:aws:states:us-east-1:123456789012:execution:rebalance:bench-20261130T120000",
                 trigger={"kind": "alarm", "event_id": "e", "summary": "x" * 2048})
    collect(run, store=store, read_snapshot=lambda _: snap)
    planned = plan(run, store=store, load_policy=lambda _: pol, now=NOW)
    # What the state machine carries after Plan (Begin's run and Plan's result; Collect's is not kept): every later
    # state's input is drawn from this and the small results of Apply and Verify.
    state = {"run": run.model_dump(mode="json"), "plan": planned}
    state_size = len(json.dumps(state, ensure_ascii=False).encode())
    table = boto3.resource("dynamodb", region_name="us-east-1").Table(store.table_name)
    items = [(f"{i['pk'][:40]}/{i['sk'][:40]}", item_size(i)) for i in every_item(table)]
    largest = max(items, key=lambda x: x[1])
    stored = store.artifacts.get(run.execution_name, "PLAN")
    capsys.readouterr()
    print(f"\nstate after Plan: {state_size:,} B; {len(items)} items, the largest {largest[1]:,} B ({largest[0]}); "
          f"{sum(i[0].startswith('PART#') for i in items)} of them parts; {len(stored['changes']):,} changes, "
          f"{len(stored['warnings'])} warnings")
    assert state_size < STATE_LIMIT * MARGIN
    assert largest[1] < ITEM_LIMIT * MARGIN, largest
    assert any(name.startswith("PART#RUN#") for name, _ in items)  # the snapshot and the plan needed parts
    assert _digest(store.artifacts.get(run.execution_name, "SNAPSHOT")) == _digest(snap.model_dump(mode="json"))
    assert stored["changes"]
    assert PlanResult.model_validate(planned).decision == decide(Plan.model_validate(stored))
    assert len(stored["warnings"]) <= 50


def _digest(doc: Any) -> str:
    """Of a document as the store writes it (sorted keys): two 83 MB documents compared without holding both."""
    return hashlib.sha256(json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()).hexdigest()
