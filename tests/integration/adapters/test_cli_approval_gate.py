"""The approval gate holds on the command line as in the controller: a plan that needs approval (mode approve, an
approval threshold) is written by `rebalancer apply` only with `--approve "reason"`, recorded with the caller's STS
identity as the approver, in the audit log as the approval page's and Slack's decisions are. `--yes` only skips the
question. Against the emulator over HTTP and the loopback Kueue API, through the real CLI entry point."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from support.five_teams import BEFORE, cli_apply, cli_table, gpus, queueing_kube

from rebalancer.adapters.aws import AwsClients
from rebalancer.adapters.dynamodb.store import Store
from rebalancer_tools.cli import cli
from rebalancer_tools.emulator.control import Emulator

TEAMS = "abcde"
AUTO = """
mode: auto
stability: {min_step: 1, cooldown_minutes: 0, max_move: 64}
approval: {moved_accelerators: 64, max_decrease_percent: 100}
teams:
""" + "".join(f"  {t}: {{weight: 1, guarantee: {{ml.p5.48xlarge: 2}}}}\n" for t in TEAMS)
APPROVE = AUTO.replace("mode: auto", "mode: approve")
THRESHOLD = AUTO.replace("moved_accelerators: 64", "moved_accelerators: 1")
DRY_RUN = AUTO.replace("mode: auto", "mode: dry-run")
REASON = "c, d and e queue work for the launch"


@pytest.fixture
def kube() -> Iterator[str]:
    with queueing_kube() as url:
        yield url


@pytest.fixture
def table(emu: Emulator, aws: AwsClients, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.delenv("REBALANCER_TABLE", raising=False)
    return cli_table(emu, aws)


def records(aws: AwsClients, table: str) -> list[dict[str, object]]:
    return Store(table, resource=aws.session.resource("dynamodb")).audit.records("c1")


def caller_arn(aws: AwsClients) -> str:
    return str(aws.client("sts").get_caller_identity()["Arn"])


@pytest.mark.parametrize(("policy", "reason"), [
    (APPROVE, "mode is approve: every plan needs an admin"),
    (THRESHOLD, "above approval.moved_accelerators 1"),
])
def test_yes_does_not_pass_the_gate(emu: Emulator, aws: AwsClients, kube: str, table: str, tmp_path: Path,
                                    policy: str, reason: str) -> None:
    result = cli_apply(tmp_path, kube, policy, "--yes", "--table", table)
    assert result.exit_code == 1, result.output
    [line] = result.stderr.strip().splitlines()[-1:]
    assert line.startswith("error: the plan needs approval (")
    assert reason in line
    assert line.endswith('nothing applied; give --approve "REASON" to approve it as your AWS identity (recorded)')
    assert gpus(emu) == BEFORE
    # the run is in the history: its plan, then refused, nothing written
    assert [(r["kind"], r["outcome"]) for r in records(aws, table)] == [("plan", "approve"), ("apply", "refused")]
    shown = CliRunner().invoke(cli, ["history", "--cluster", "c1", "--table", table], terminal_width=200)
    assert shown.exit_code == 0, shown.output
    [row] = [line for line in shown.stdout.splitlines() if " refused " in line]
    assert "nothing written: the plan needs approval and no --approve was given" in " ".join(row.split())


@pytest.mark.parametrize("policy", [APPROVE, THRESHOLD])
def test_approve_writes_the_plan_and_records_who_approved_it_and_why(
        emu: Emulator, aws: AwsClients, kube: str, table: str, tmp_path: Path, policy: str) -> None:
    result = cli_apply(tmp_path, kube, policy, "--yes", "--approve", f"  {REASON}\n", "--table", table)
    assert result.exit_code == 0, result.output
    me = caller_arn(aws)
    assert f"approved by {me}: {REASON}" in result.stdout
    assert gpus(emu) != BEFORE
    kinds = [(r["kind"], r["outcome"]) for r in records(aws, table)]
    assert kinds == [("plan", "approve"), ("approval", "approved"), ("apply", "applied")]
    approval = records(aws, table)[1]
    assert approval["who"] == me
    assert approval["detail"] == {"comment": REASON, "identity": {
        "sts_arn": me, "user_id": aws.client("sts").get_caller_identity()["UserId"],
        "via": "rebalancer apply --approve"}}
    # `history` shows the approval as it shows the page's: the step, the outcome and who.
    shown = CliRunner().invoke(cli, ["history", "--cluster", "c1", "--table", table])
    assert shown.exit_code == 0, shown.output
    [row] = [line for line in shown.stdout.splitlines() if " approval " in line]
    assert "approved" in row
    assert me[:20] in row


def test_a_plan_that_needs_no_approval_is_written_with_yes_alone(
        emu: Emulator, aws: AwsClients, kube: str, table: str, tmp_path: Path) -> None:
    result = cli_apply(tmp_path, kube, AUTO, "--yes", "--approve", REASON, "--table", table)
    assert result.exit_code == 0, result.output
    assert gpus(emu) != BEFORE
    assert "note: the plan needs no approval; --approve is not recorded" in result.stderr
    assert [r["kind"] for r in records(aws, table)] == ["plan", "apply"]


def test_dry_run_is_honoured_whatever_is_given(emu: Emulator, aws: AwsClients, kube: str, table: str,
                                               tmp_path: Path) -> None:
    result = cli_apply(tmp_path, kube, DRY_RUN, "--yes", "--approve", REASON, "--table", table)
    assert result.exit_code == 0, result.output
    assert "the policy's mode is dry-run: nothing applied" in result.stdout
    assert gpus(emu) == BEFORE
    assert records(aws, table) == []


def test_an_empty_reason_is_refused_before_anything_is_read(emu: Emulator, aws: AwsClients, kube: str, table: str,
                                                            tmp_path: Path) -> None:
    result = cli_apply(tmp_path, kube, APPROVE, "--yes", "--approve", " \t", "--table", table)
    assert result.exit_code == 2, result.output
    assert result.stderr.strip() == "error: --approve: give the reason for approving (one line)"
    assert gpus(emu) == BEFORE


def test_without_a_table_an_approved_plan_is_written_and_says_who_approved(
        emu: Emulator, aws: AwsClients, kube: str, table: str, tmp_path: Path) -> None:
    result = cli_apply(tmp_path, kube, APPROVE, "--yes", "--approve", REASON)
    assert result.exit_code == 0, result.output
    assert f"approved by {caller_arn(aws)}: {REASON}" in result.stdout
    assert "this run is not recorded" in result.stderr
    assert gpus(emu) != BEFORE
