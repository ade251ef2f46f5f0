"""`rebalancer approvals` from a terminal: the run waiting in RequestApproval is listed with the figure its threshold
used, and approving it by a prefix of its run's id resumes the state machine through the same decision use case as
the page, recorded with the caller's STS identity; a second decision changes nothing."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from support.approval_stack import CLUSTER, Waiting

from rebalancer.app import wiring
from rebalancer.domain.plan import movement
from rebalancer_tools.cli import approvals_cmd, cli
from rebalancer_tools.reports.run_ids import short_run


def rebalancer(*args: str) -> tuple[int, str]:
    got = CliRunner().invoke(cli, [*args], terminal_width=200)
    return got.exit_code, got.output


def test_list_then_approve_by_run_id_resumes_the_run(waiting: Waiting, monkeypatch: pytest.MonkeyPatch) -> None:
    table = wiring.store().table_name
    # The stack's table with the stack's clock (a fixed day): the CLI's own Store of that table reads real time.
    monkeypatch.setattr(approvals_cmd, "open_store", lambda *_: wiring.store())
    code, out = rebalancer("approvals", "list", "--cluster", CLUSTER, "--table", table, "--format", "json")
    assert code == 0, out
    [listed] = [json.loads(line) for line in out.splitlines()]
    execution = waiting.arn.rsplit(":", 1)[-1]
    assert listed["run"] == short_run(execution, CLUSTER)
    assert listed["moves"] == movement(waiting.plan.changes)
    assert listed["reasons"] == list(waiting.plan.approval_reasons)

    before = waiting.quotas()
    code, out = rebalancer("approvals", "approve", listed["run"][:10], "--cluster", CLUSTER, "--table", table,
                           "--comment", "from the terminal", "--yes")
    assert code == 0, out
    assert out.strip().endswith("Thank you: the change was approved.")
    done = waiting.stack.wait(waiting.arn)
    assert done["status"] == "SUCCEEDED"
    assert waiting.stack.states_entered(waiting.arn)[-1] == "Applied"
    assert waiting.quotas() != before
    [audit] = waiting.approval_audit()
    assert audit["outcome"] == "approved"
    assert audit["who"].startswith("arn:aws:sts::")  # the caller's identity, not a typed name
    assert audit["detail"] == {"comment": "from the terminal",
                               "identity": {"sts_arn": audit["who"], "user_id": "AKIAIOSFODNN7EXAMPLE",
                                            "via": "rebalancer approvals"}}  # moto's caller

    code, out = rebalancer("approvals", "list", "--cluster", CLUSTER, "--table", table)
    assert code == 0, out
    assert out.startswith("no pending approval for")
    code, out = rebalancer("approvals", "reject", listed["approval_id"], "--cluster", CLUSTER, "--table", table,
                           "--yes")
    assert code == 2, out
    assert "no pending approval of" in out
