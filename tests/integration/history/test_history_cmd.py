"""`rebalancer history` against moto: the table found through the stack's TableName output, records oldest first,
a run's snapshot written for `rollback --to`, and one clear line for what is missing."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import boto3
import pytest
from click.testing import CliRunner
from moto import mock_aws

from rebalancer.adapters.dynamodb.store import Store
from rebalancer_tools.cli import cli

TEMPLATE = {
    "Resources": {"Table": {"Type": "AWS::DynamoDB::Table", "Properties": {
        "TableName": "audit-table", "BillingMode": "PAY_PER_REQUEST",
        "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"},
                                 {"AttributeName": "sk", "AttributeType": "S"}]}}},
    "Outputs": {"TableName": {"Value": {"Ref": "Table"}}},
}


@pytest.fixture
def store() -> Iterator[Store]:
    with mock_aws():
        boto3.client("cloudformation").create_stack(StackName="rebalancer", TemplateBody=json.dumps(TEMPLATE))
        t = iter(datetime(2026, 11, 30, 12, tzinfo=UTC) + timedelta(seconds=i) for i in range(100))
        yield Store("audit-table", now=lambda: next(t))


def run(*args: str) -> tuple[int, str]:
    got = CliRunner().invoke(cli, list(args), env={"REBALANCER_TABLE": None})
    return got.exit_code, got.output


def test_records_oldest_first_through_the_stack_output(store: Store) -> None:
    store.audit.append("c1", "c1-20261130T120000", "trigger", outcome="started")
    store.audit.append("c1", "c1-20261130T120000", "apply", outcome="applied", who="alice",
                before={"research": {"ml.p5.48xlarge": 12}}, after={"research": {"ml.p5.48xlarge": 8}})
    store.audit.append("c2", "c2-20261130T120000", "trigger", outcome="started")
    code, out = run("history", "--cluster", "c1", "--stack", "rebalancer", "--json")
    assert code == 0, out
    records = [json.loads(line) for line in out.splitlines()]
    assert [(r["kind"], r["outcome"]) for r in records] == [("trigger", "started"), ("apply", "applied")]
    assert records[1]["who"] == "alice"
    code, table = run("history", "--cluster", "c1", "--table", "audit-table")
    assert code == 0
    assert "research p5.48xlarge 12→8" in table
    assert table.count("20261130T120000") == 1  # the run's id on its first row only


def test_snapshot_of_a_run_is_written_for_rollback(store: Store, tmp_path: Path) -> None:
    store.artifacts.put("c1-20261130T120000", "SNAPSHOT", {"quotas": [], "taken_at": "2026-11-30T12:00:00Z"})
    out_file = tmp_path / "before.json"
    code, out = run("history", "--cluster", "c1", "--table", "audit-table", "--snapshot-of", "c1-20261130T120000",
                    "-o", str(out_file))
    assert code == 0, out
    assert json.loads(out_file.read_text())["taken_at"] == "2026-11-30T12:00:00Z"
    code, out = run("history", "--cluster", "c1", "--table", "audit-table", "--snapshot-of", "c1-nope")
    assert code == 2
    assert "no snapshot stored for run c1-nope" in out


def test_a_stack_without_the_output_and_a_missing_table_are_one_line(store: Store) -> None:
    code, out = run("history", "--cluster", "c1", "--stack", "no-such-stack")
    assert code == 1
    assert out.startswith("error: DescribeStacks no-such-stack")
    code, out = run("history", "--cluster", "c1", "--table", "no-such-table")
    assert code == 1
    assert out.startswith("error: reading the audit table no-such-table: ResourceNotFoundException")


def test_the_id_history_shows_is_the_one_snapshot_of_takes(store: Store, tmp_path: Path) -> None:
    for execution in ("c-1-20261130T120000", "c-1-cli20261130T130000", "c-1-cli20261130T140000"):
        store.audit.append("c-1", execution, "apply", outcome="applied")
        store.artifacts.put(execution, "SNAPSHOT", {"quotas": [], "taken_at": execution[-15:]})
    code, table = run("history", "--cluster", "c-1", "--table", "audit-table")
    assert code == 0
    assert "cli20261130T130000" in table
    assert "c-1-cli" not in table
    code, out = run("history", "--cluster", "c-1", "--table", "audit-table", "--snapshot-of", "cli20261130T13")
    assert code == 0, out
    assert json.loads(out)["taken_at"] == "20261130T130000"
    code, out = run("history", "--cluster", "c-1", "--table", "audit-table", "--snapshot-of", "cli")
    assert code == 2
    assert out.startswith("error: --snapshot-of: 'cli' names 2 runs of c-1")


def test_piped_history_is_one_line_per_record_and_usage_says_when_nothing_is_metered(store: Store,
                                                                                       tmp_path: Path) -> None:
    store.audit.append("c1", "c1-20261130T120000", "apply", outcome="applied", who="alice",
                before={"research": {"ml.p5.48xlarge": 12}, "inference": {"ml.p5.48xlarge": 4}},
                after={"research": {"ml.p5.48xlarge": 8}, "inference": {"ml.p5.48xlarge": 8}})
    code, out = run("history", "--cluster", "c1", "--table", "audit-table")
    assert code == 0
    [row] = [line for line in out.splitlines() if "alice" in line]  # CliRunner's stdout is a pipe
    assert "alice; inference p5.48xlarge 4→8; research p5.48xlarge 12→8" in row
    policy = tmp_path / "p.yaml"
    policy.write_text("teams:\n  research: {budget: {accelerator_hours: 100}}\n")
    got = CliRunner().invoke(cli, ["usage", "--cluster", "c1", "--table", "audit-table", "--policy", str(policy),
                                   "--at", "2026-11-30T13:00:00Z"], env={"REBALANCER_TABLE": None})
    assert got.exit_code == 0, got.output
    assert got.stderr.startswith("warning: nothing metered for c1 in audit-table from 2026-11-01 00:00 UTC")


@pytest.mark.parametrize("columns", [100, 60])
def test_history_fits_the_terminal_and_has_json_and_csv(store: Store, columns: int) -> None:
    """At COLUMNS=100 a table whose changes wrap, at 60 a list; every row 186-400 characters long before."""
    store.audit.append("c1", "c1-20261130T120000", "trigger", outcome="started")
    store.audit.append("c1", "c1-20261130T120000", "apply", outcome="applied",
                       who="arn:aws:sts::123456789012:assumed-role/platform-admin/alice",
                       before={"research": {"ml.p5.48xlarge": 12}, "training": {"ml.p5.48xlarge": 12},
                               "inference": {"ml.g5.12xlarge": 4}},
                       after={"research": {"ml.p5.48xlarge": 8}, "training": {"ml.p5.48xlarge": 8},
                              "inference": {"ml.g5.12xlarge": 8}})
    got = CliRunner().invoke(cli, ["history", "--cluster", "c1", "--table", "audit-table"],
                             env={"REBALANCER_TABLE": None, "COLUMNS": str(columns)})
    assert got.exit_code == 0, got.output
    assert max(len(line) for line in got.stdout.splitlines()) <= columns
    assert {"training", "inference", "g5.12xlarge", "4→8", "12→8"} <= set(
        got.stdout.replace(";", " ").split())
    code, text = run("history", "--cluster", "c1", "--table", "audit-table", "--format", "csv")
    assert code == 0
    header, _, apply = text.splitlines()
    assert header == "run,at,step,outcome,who,changes"
    assert apply.startswith("20261130T120000,")
    assert apply.endswith(",inference g5.12xlarge 4→8; research p5.48xlarge 12→8; training p5.48xlarge 12→8")
    code, lines = run("history", "--cluster", "c1", "--table", "audit-table", "--format", "json")
    assert [json.loads(line)["kind"] for line in lines.splitlines()] == ["trigger", "apply"]
