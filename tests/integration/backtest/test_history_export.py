"""The observe step's samples in the table (moto) and `rebalancer history export` → `rebalancer backtest`."""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import boto3
import pytest
from click.testing import CliRunner
from moto import mock_aws
from support.template import create_table

from rebalancer.adapters.dynamodb.store import Store
from rebalancer.adapters.dynamodb.table import KEY, SORT, TTL
from rebalancer.app.config import ObserveConfig, parse
from rebalancer.app.observe import observe
from rebalancer.domain.sample import sample_of
from rebalancer.domain.snapshot import Snapshot
from rebalancer_tools.backtest.history import load_history
from rebalancer_tools.cli import cli

P5 = "ml.p5.48xlarge"
T0 = datetime(2026, 11, 30, 12, tzinfo=UTC)


def snapshot(at: datetime, research_pending: int) -> Snapshot:
    return Snapshot.model_validate({
        "taken_at": at,
        "cluster": {"ClusterName": "c1", "ClusterArn": "arn:aws:sagemaker:us-east-1:123456789012:cluster/c1",
                    "InstanceGroups": [{"InstanceGroupName": "g", "InstanceType": P5, "CurrentCount": 4}]},
        "nodes": [{"InstanceGroupName": "g", "InstanceId": f"i-{i}", "InstanceType": P5,
                   "InstanceStatus": {"Status": "Running" if i < 3 else "Failure"}} for i in range(4)],
        "quotas": [{"ComputeQuotaId": f"q-{t}", "Name": t, "ComputeQuotaVersion": 1, "Status": "Created",
                    "ComputeQuotaTarget": {"TeamName": t},
                    "ComputeQuotaConfig": {"ComputeQuotaResources": [{"InstanceType": P5, "Count": 2}]}}
                   for t in ("research", "training")],
        "demand": {"research": {P5: {"in_use": {"accelerators": 16}, "pending": {"accelerators": research_pending}}},
                   "training": {P5: {"in_use": {"accelerators": 4}}}},
    })


@pytest.fixture
def store() -> Iterator[Store]:
    with mock_aws():
        create_table(boto3.client("dynamodb", region_name="us-east-1"), "audit-table")
        clock = iter(T0 + timedelta(seconds=i) for i in range(1000))
        yield Store("audit-table", resource=boto3.resource("dynamodb", region_name="us-east-1"),
                    now=lambda: next(clock))


def test_a_sample_holds_use_pending_quota_and_healthy_nodes_per_pool() -> None:
    s = sample_of(snapshot(T0, 8))
    assert s.nodes[P5].healthy == 3
    assert s.nodes[P5].unhealthy == 1
    research = s.teams["research"][P5]
    assert (research.in_use, research.pending, research.quota) == (16, 8, 16)  # Count 2 × 8 GPUs
    assert len(s.model_dump_json()) < 1000


def test_observe_stores_one_sample_per_cluster_with_the_retention_as_ttl(store: Store) -> None:
    cfg = parse(ObserveConfig, {"TABLE_NAME": "audit-table", "MANAGED_CLUSTERS": "c1",
                                "POLICY_PARAMETER_PREFIX": "/p", "HISTORY_RETENTION_DAYS": "30"})
    measured = observe([snapshot(T0, 8)], store, timedelta(days=cfg.history_retention_days))
    assert [m.cluster for m in measured] == ["c1"]
    scanned = store.table.table.scan()["Items"]
    # observe also meters the reading for the budgets: the cluster's first reading, no interval yet
    assert sorted((i[KEY], i[SORT]) for i in scanned) == [("METER#c1", "LAST"),
                                                          ("SAMPLE#c1", "2026-11-30T12:00:00+00:00")]
    items = [i for i in scanned if i[KEY].startswith("SAMPLE#")]
    assert int(items[0][TTL]) == int((T0 + timedelta(days=30)).timestamp())
    doc = json.loads(gzip.decompress(bytes(items[0]["body"].value)))
    assert doc["teams"]["research"][P5]["pending"] == 8


def test_samples_come_back_oldest_first_from_since(store: Store) -> None:
    for minutes in (10, 0, 5):
        store.samples.put(sample_of(snapshot(T0 + timedelta(minutes=minutes), minutes)))
    assert [s.at for s in store.samples.since("c1")] == [T0 + timedelta(minutes=m) for m in (0, 5, 10)]
    assert [s.at for s in store.samples.since("c1", since=T0 + timedelta(minutes=5))] == [
        T0 + timedelta(minutes=m) for m in (5, 10)]
    assert list(store.samples.since("other")) == []


def run(*args: str) -> Any:
    return CliRunner().invoke(cli, list(args), env={"REBALANCER_TABLE": None})


@pytest.mark.parametrize("name", ["history.jsonl", "history.jsonl.gz"])
def test_export_writes_runs_and_samples_that_backtest_replays(store: Store, tmp_path: Path, name: str) -> None:
    early = T0 - timedelta(days=40)
    store.samples.put(sample_of(snapshot(early, 8)))  # before --since: left out
    for i in range(12):
        store.samples.put(sample_of(snapshot(T0 + timedelta(minutes=5 * i), 8 if i < 6 else 0)))
    store.audit.append("c1", "c1-20261130T120000", "plan", outcome="applied")
    store.artifacts.put("c1-20261130T120000", "SNAPSHOT", snapshot(T0 + timedelta(minutes=1), 8).model_dump(
        mode="json"))
    store.audit.append("c1", "c1-20261130T130000", "trigger", outcome="started")  # a run without a snapshot
    out = tmp_path / name
    got = run("history", "export", "--cluster", "c1", "--table", "audit-table", "--since", "2026-11-01",
              "-o", str(out))
    assert got.exit_code == 0, got.output
    assert "1 runs and 12 samples of c1" in got.output
    assert (out.read_bytes()[:2] == b"\x1f\x8b") == name.endswith(".gz")
    h = load_history(out)
    assert len(h.runs) == 1
    assert len(h.samples) == 12
    assert len(h.states()) == 13
    policy = tmp_path / "p.yaml"
    policy.write_text("teams:\n  research: {}\n  training: {}\n")
    got = run("backtest", "--history", str(out), "--policy", str(policy), "--report", str(tmp_path / "r"))
    assert got.exit_code == 0, got.output
    assert "runs that changed something" in got.output
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    assert summary["policies"][0]["states"] == 13


def test_history_without_export_still_needs_a_cluster(store: Store) -> None:
    got = run("history", "--table", "audit-table")
    assert got.exit_code == 2
    assert "--cluster: give --cluster NAME" in got.output


def test_a_bad_since_is_exit_2(store: Store, tmp_path: Path) -> None:
    got = run("history", "export", "--cluster", "c1", "--table", "audit-table", "--since", "last week",
              "-o", str(tmp_path / "h.jsonl"))
    assert got.exit_code == 2
    assert "--since: expected a duration like 30d" in got.output


def test_a_reading_or_sample_dynamodb_refuses_is_a_warning_and_the_metrics_still_go_out(store: Store) -> None:
    cfg = parse(ObserveConfig, {"TABLE_NAME": "missing-table", "MANAGED_CLUSTERS": "c1,c2",
                                "POLICY_PARAMETER_PREFIX": "/p", "HISTORY_RETENTION_DAYS": "90"})
    broken = Store("missing-table", resource=boto3.resource("dynamodb", region_name="us-east-1"))
    warnings: list[str] = []
    two = [snapshot(T0, 8), snapshot(T0, 8).model_copy(update={"cluster": snapshot(T0, 8).cluster.model_copy(
        update={"ClusterName": "c2"})})]
    measured = observe(two, broken, timedelta(days=cfg.history_retention_days), warn=warnings.append)
    assert [m.cluster for m in measured] == ["c1", "c2"]
    assert [w.split(":")[0] for w in warnings] == [
        "use of c1 not metered this time (the next reading covers the interval)", "demand sample of c1 not stored",
        "use of c2 not metered this time (the next reading covers the interval)", "demand sample of c2 not stored"]
    assert all("ResourceNotFoundException" in w for w in warnings)
