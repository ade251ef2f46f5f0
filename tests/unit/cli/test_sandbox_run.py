"""The sandbox's controller, the parts that need no stack: its inbox (each message heard once, in the order it came),
what `rebalancer emulator run` says about a run, the second admin as STS knows it, and the `--policy` option's
refusals in one line."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import boto3
import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st
from moto import mock_aws

from rebalancer_tools.cli import cli
from rebalancer_tools.cli.sandbox_cmds import decide_lines, report_lines
from rebalancer_tools.local.sandbox import CALLER, SECOND_ADMIN, add_admin
from rebalancer_tools.local.sandbox_controller import Delivered, Inbox, RunReport

CLUSTER = "demo-hyperpod"


class Queue:
    """The stack's SNS subscription: what arrived since the last drain."""

    def __init__(self) -> None:
        self.waiting: list[dict[str, Any]] = []

    def sns_messages(self) -> list[dict[str, Any]]:
        out, self.waiting = self.waiting, []
        return out


class Slack:
    def __init__(self) -> None:
        self.posts: list[dict[str, Any]] = []


# An arrival is ("email", n) or ("slack", n); None is a collect.
EVENTS = st.lists(st.one_of(st.none(), st.tuples(st.sampled_from(["email", "slack"]), st.integers(0, 10**6))),
                  max_size=30)


@given(EVENTS)
def test_the_inbox_hears_each_message_once_in_the_order_of_its_channel(events: list[Any]) -> None:
    queue, slack = Queue(), Slack()
    heard: list[Delivered] = []
    inbox = Inbox(queue, slack, heard.append)  # type: ignore[arg-type]
    sent: dict[str, list[str]] = {"email": [], "slack": []}
    for event in events:
        if event is None:
            inbox.collect()
            continue
        channel, n = event
        sent[channel].append(f"message {n}")
        if channel == "email":
            queue.waiting.append({"Subject": f"message {n}", "Message": f"body {n}", "kind": "applied"})
        else:
            slack.posts.append({"text": f"message {n}", "blocks": []})
    total = inbox.collect()
    assert total == len(heard) == len(inbox.messages) == sum(len(v) for v in sent.values())
    for channel in ("email", "slack"):
        assert [m.subject for m in heard if m.channel == channel] == sent[channel]
    assert inbox.since(total) == ()
    assert heard == inbox.messages


def test_a_message_mentions_what_its_text_or_its_post_carries() -> None:
    email = Delivered(channel="email", subject="Approval needed", body="Approve:\nhttp://x/approvals/abc?sig=1\n")
    post = Delivered(channel="slack", subject="Approval needed",
                     post={"blocks": [{"type": "actions", "elements": [{"action_id": "approve", "value": "abc"}]}]})
    assert email.mentions("abc")
    assert post.mentions("abc")
    assert not email.mentions("abd")
    assert not post.mentions("abd")


def test_what_run_says_of_each_outcome() -> None:
    at = datetime(2026, 12, 2, 21, 15, tzinfo=UTC)
    waiting = RunReport(cluster=CLUSTER, started=True, execution=f"{CLUSTER}-20261202T211546-b653f43",
                        status="RUNNING", states=("Begin", "Collect", "Plan", "Decide", "RequestApproval"),
                        approval_id="dcc8a3cc167ecb4a45e8c48d", decide_by=at)
    assert report_lines(waiting) == [
        f"run 20261202T211546-b653f43 of {CLUSTER}: Begin → Collect → Plan → Decide → RequestApproval",
        "it waits for an admin: approval dcc8a3cc167ecb4a45e8c48d, to decide by 2026-12-02 21:15 UTC"]
    assert decide_lines(waiting)[1:] == [f"  rebalancer approvals approve 20261202T211546-b653f43 --cluster {CLUSTER}",
                                         f"  rebalancer approvals reject 20261202T211546-b653f43 --cluster {CLUSTER}"]
    ended = waiting.model_copy(update={"status": "SUCCEEDED", "states": ("Begin", "Decide", "NoChange"),
                                       "approval_id": None, "decide_by": None})
    assert report_lines(ended)[1:] == ["it ended: NoChange (SUCCEEDED)"]
    held = ended.model_copy(update={"headline": f"{CLUSTER}: nothing changes now: 2 changes held back (cooldown)"})
    assert report_lines(held)[1:] == ["it ended: NoChange (SUCCEEDED)",
                                      f"{CLUSTER}: nothing changes now: 2 changes held back (cooldown)"]
    going = ended.model_copy(update={"status": "RUNNING"})
    assert report_lines(going)[1] == f"still running (`rebalancer history --cluster {CLUSTER}` shows it when it ends)"
    refused = RunReport(cluster=CLUSTER, started=False, reason="a run of demo-hyperpod is under way")
    assert report_lines(refused) == ["no run started: a run of demo-hyperpod is under way"]


def test_the_second_admin_is_who_sts_says_its_keys_are() -> None:
    with mock_aws():
        add_admin("123456789012", SECOND_ADMIN)

        def who(keys: dict[str, str]) -> str:
            sts = boto3.client("sts", region_name="us-east-1", aws_access_key_id=keys["AWS_ACCESS_KEY_ID"],
                               aws_secret_access_key=keys["AWS_SECRET_ACCESS_KEY"])
            return str(sts.get_caller_identity()["Arn"])

        assert who(SECOND_ADMIN.environment()) == SECOND_ADMIN.arn() == "arn:aws:iam::123456789012:user/admin-2"
        assert who({"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}) == CALLER


def test_the_controllers_policy_is_refused_in_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def served(*args: object, **kwargs: object) -> None:
        raise AssertionError("the sandbox started with a policy its plan step would refuse")

    monkeypatch.setattr("rebalancer_tools.local.sandbox.open_sandbox", served)
    bad = tmp_path / "policy.yaml"
    bad.write_text("mode: sideways\nteams: {}\n")
    got = CliRunner().invoke(cli, ["emulator", "--seed-demo", "--port", "0", "--policy", str(bad)])
    assert got.exit_code == 2
    assert got.output == f"error: {bad}: mode: Input should be 'auto', 'approve' or 'dry-run' (got 'sideways')\n"
    got = CliRunner().invoke(cli, ["emulator", "--policy", str(bad)])
    assert got.exit_code == 2
    assert got.output == "error: --policy: the sandbox controller's policy: give --seed-demo too\n"


def test_run_written_to_a_file_folds_its_messages_at_a_readable_width(monkeypatch: pytest.MonkeyPatch) -> None:
    """Emails and Slack posts are prose: to a pipe or a file they fold at 100 columns (a link stays whole), where a
    table's 1,000 columns made each rule and box a line of 1,000 characters."""
    link = "http://127.0.0.1:5001/approvals/abc?decision=approve&expires=1796699980&sig=" + "e" * 64
    body = "Moves: 8 accelerators taken from teams, 4 given. " * 6 + f"\n\nApprove:\n{link}\n"
    post = {"blocks": [{"type": "section", "text": {"type": "mrkdwn", "text": "Approval needed: " + "x " * 120}}]}
    report = RunReport(cluster=CLUSTER, started=True, execution=f"{CLUSTER}-20261208T021800", status="SUCCEEDED",
                       messages=(Delivered(channel="email", subject="Approval needed", body=body),
                                 Delivered(channel="slack", subject="Approval needed", post=post)))
    monkeypatch.setattr("rebalancer_tools.cli.sandbox_cmds._call", lambda *_, **__: report.model_dump(mode="json"))
    monkeypatch.delenv("COLUMNS", raising=False)
    got = CliRunner().invoke(cli, ["emulator", "run", "--endpoint", "http://127.0.0.1:1"])
    assert got.exit_code == 0, got.output
    lines = got.output.splitlines()
    assert link in lines  # whole, on a line of its own
    assert max(len(line) for line in lines if line != link) <= 100
    assert "Approval needed: x x" in got.output
