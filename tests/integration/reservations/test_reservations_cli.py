"""`rebalancer reserve` and `rebalancer reservations` through click against the table in moto: stored and listed
(table and JSON), refused in one line with nothing stored, pending until approved, cancelled, each audited with the
caller's STS identity."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import boto3
import pytest
from click.testing import CliRunner
from moto import mock_aws
from support.clock import ticking
from support.clusters import snapshot
from support.template import create_table

from rebalancer.adapters.dynamodb.store import Store
from rebalancer_tools.cli import cli, reservations_cmd

P5 = "ml.p5.48xlarge"
POLICY = """
teams:
  research: {cap: {ml.p5.48xlarge: 48}}
  inference: {guarantee: {ml.p5.48xlarge: 16}}
approval: {moved_accelerators: 32}
"""


@pytest.fixture
def store(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Store]:
    with mock_aws():
        create_table(boto3.client("dynamodb", region_name="us-east-1"))
        table = Store("t", resource=boto3.resource("dynamodb", region_name="us-east-1"), now=ticking())
        monkeypatch.setattr(reservations_cmd, "open_store", lambda *_: table)
        (tmp_path / "policy.yaml").write_text(POLICY)
        (tmp_path / "snap.json").write_text(snapshot({P5: 8}).model_dump_json())
        monkeypatch.chdir(tmp_path)
        yield table


def run(*args: str) -> tuple[int, str]:
    got = CliRunner().invoke(cli, list(args), env={"AWS_DEFAULT_REGION": "us-east-1"})
    return got.exit_code, got.output


def reserve(n: int, *more: str, until: str = "2026-12-04T18:00Z") -> tuple[int, str]:
    return run("reserve", "--cluster", "test", "--table", "t", "--team", "research", "--pool", P5,
               "--accelerators", str(n), "--from", "2026-12-01T08:00+01:00", "--until", until, "--reason", "launch",
               "--policy", "policy.yaml", "--snapshot", "snap.json", *more)


def test_a_reservation_is_stored_listed_and_audited(store: Store) -> None:
    code, out = reserve(32)
    assert code == 0, out
    assert "research 32 x ml.p5.48xlarge from 2026-12-01 07:00 until 2026-12-04 18:00 UTC (launch): approved" in out
    code, listed = run("reservations", "--cluster", "test", "--table", "t", "--format", "json")
    assert code == 0, listed
    [rec] = json.loads(listed)
    assert (rec["team"], rec["accelerators"], rec["status"], rec["requested_by"]) == (
        "research", 32, "approved", "arn:aws:sts::123456789012:user/moto")
    code, table = run("reservations", "--cluster", "test", "--table", "t")
    assert code == 0
    assert rec["reservation_id"] in table
    assert "ahead" in table
    [audited] = [r for r in store.audit.records("test") if r["kind"] == "reservation"]
    assert audited["outcome"] == "requested:approved"
    assert audited["execution"] == rec["reservation_id"]


def test_a_reservation_that_cannot_fit_is_one_line_and_stores_nothing(store: Store) -> None:
    code, out = reserve(49)
    assert code == 2
    assert out == "error: --accelerators: 49 accelerators is above team research's cap.ml.p5.48xlarge = 48\n"
    code, out = reserve(8, until="2026-12-04T18:00")
    assert code == 2
    assert "names no time zone" in out
    assert out.count("\n") == 1
    assert store.reservations.of_cluster("test") == []


def test_a_large_reservation_waits_for_approval_then_is_cancelled(store: Store) -> None:
    code, out = reserve(40)
    assert code == 0, out
    assert "pending" in out
    rid = store.reservations.of_cluster("test")[0].reservation_id
    assert f"rebalancer reservations approve {rid} --cluster test" in out
    code, out = run("reservations", "approve", rid, "--cluster", "test", "--table", "t")
    assert (code, out) == (1, f"error: reservation {rid} was requested by arn:aws:sts::123456789012:user/moto: "
                              "another admin approves it\n")
    _requested_by(store, rid, "arn:aws:sts::123456789012:assumed-role/Admin/alice")
    code, out = run("reservations", "approve", rid, "--cluster", "test", "--table", "t")
    assert code == 0, out
    assert out.startswith("approved by arn:aws:sts::123456789012:user/moto")
    code, out = run("reservations", "approve", rid, "--cluster", "test", "--table", "t")
    assert (code, out) == (1, f"error: reservation {rid} is approved\n")
    code, out = run("reservations", "cancel", rid, "--cluster", "test", "--table", "t")
    assert code == 0, out
    assert "cancelled" in out
    code, out = run("reservations", "cancel", "r-nope", "--cluster", "test", "--table", "t")
    assert (code, out) == (1, "error: no reservation r-nope on test\n")
    outcomes = [r["outcome"] for r in store.audit.records("test") if r["kind"] == "reservation"]
    assert outcomes == ["requested:pending", "approved:approved", "cancelled:cancelled"]
    code, history = run("history", "--cluster", "test", "--table", "t")
    assert code == 0, history
    assert "cancelled:cancelled" in history


def _requested_by(store: Store, rid: str, who: str) -> None:
    """As if another admin had asked for it (moto's STS answers every call with one identity)."""
    key = {"pk": "RESERVATION#test", "sk": rid}
    item = store.table.table.get_item(Key=key)["Item"]
    doc = json.loads(str(item["doc"]))
    store.table.table.update_item(Key=key, UpdateExpression="SET doc = :d",
                                  ExpressionAttributeValues={":d": json.dumps({**doc, "requested_by": who})})
