"""Secrets stay out of logs: a whole approval flow (trigger → collect → plan → approval request on SNS and Slack →
an approve from Slack → apply → verify → notify) at DEBUG, the service's Powertools logger and every library logger
the functions use (botocore, slack_sdk, urllib3) captured, with a known Slack signing secret, Slack webhook URL,
approval-link signing key and the run's task token. None of them appears in any log line, notification or audit
record. (The task token is stored in its approval record: that is where SendTaskSuccess reads it.)"""

from __future__ import annotations

import gzip
import hashlib
import hmac
import json
import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlencode

import boto3
import pytest
from support.approval_stack import CLUSTER, P5, POLICY
from support.emulator import in_process_emulator
from support.events import load_event
from support.kube_api import pod_set, serve, workload

from rebalancer.app import wiring
from rebalancer.app.notifications.notify import approval_id_of
from rebalancer.app.observability import logger as service_logger
from rebalancer_tools.fakes.ticking_clock import TickingClock
from rebalancer_tools.local.stack import APPROVAL_KEY, LocalStack, SlackReceiver

pytestmark = pytest.mark.slow

SIGNING_SECRET = "sig-SECRET-8f14e45fceea167a5a36dedd4bea2543"
WEBHOOK_PATH = "/services/T0SECRET/B0SECRET/hook-SECRET-c9f0f895fb98ab9159f51fd0297e236d"
HARNESS = ("moto", "werkzeug", "rebalancer_tools", "support")  # the test's own stand-ins, not the functions


class Capture(logging.Handler):
    """Records logged while a function's handler runs (on whichever thread runs it), not the harness's own calls."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []
        self.inside: set[int] = set()

    def functions_of(self, stack: LocalStack) -> None:
        for name, handler in list(stack._handlers.items()):
            stack._handlers[name] = self._watched(handler)

    def _watched(self, handler: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
        def run(event: Any, context: Any) -> Any:
            self.inside.add(threading.get_ident())
            try:
                return handler(event, context)
            finally:
                self.inside.discard(threading.get_ident())

        return run

    def emit(self, record: logging.LogRecord) -> None:
        if record.name.startswith(HARNESS) or record.thread not in self.inside:
            return
        try:
            self.lines.append(self.format(record))
        except TypeError:  # botocore logs some bodies as bytes, which the JSON formatter refuses
            self.lines.append(f"{record.name} {record.msg!r} {record.args!r}")


@contextmanager
def everything_at_debug() -> Iterator[Capture]:
    """The service logger (its own JSON formatter, extra keys included) and the root logger, both at DEBUG."""
    capture = Capture()
    capture.setFormatter(service_logger.registered_formatter)
    root = logging.getLogger()
    levels = (service_logger.log_level, root.level)
    service_logger.setLevel("DEBUG")
    root.setLevel(logging.DEBUG)
    service_logger.addHandler(capture)
    root.addHandler(capture)
    try:
        yield capture
    finally:
        service_logger.removeHandler(capture)
        root.removeHandler(capture)
        service_logger.setLevel(levels[0])
        root.setLevel(levels[1])


def readable(value: object) -> str:
    """A table item's value as text; the gzip'd run artifacts unpacked, so a secret inside one would be seen."""
    raw = getattr(value, "value", None)
    if isinstance(raw, bytes):
        return gzip.decompress(raw).decode() if raw[:2] == b"\x1f\x8b" else raw.decode("utf-8", "replace")
    return str(value)


def slack_headers(body: str, now: float) -> dict[str, str]:
    ts = str(int(now))
    sig = "v0=" + hmac.new(SIGNING_SECRET.encode(), f"v0:{ts}:{body}".encode(), hashlib.sha256).hexdigest()
    return {"X-Slack-Request-Timestamp": ts, "X-Slack-Signature": sig,
            "Content-Type": "application/x-www-form-urlencoded"}


def test_no_secret_in_any_log_line_notification_or_audit_record() -> None:
    clock = TickingClock()
    with (in_process_emulator(seed_demo=True), serve() as (kube_url, kube), SlackReceiver() as slack,
          everything_at_debug() as logs):
        kube.add(workload("research", "pretrain", [pod_set(3, {"nvidia.com/gpu": 8}, P5)]),
                 workload("training", "finetune", [pod_set(1, {"nvidia.com/gpu": 8}, P5)], admitted_on=P5))
        webhook = slack.origin + WEBHOOK_PATH
        with LocalStack(clusters={CLUSTER: POLICY}, kube_url=kube_url, slack_webhook_url=webhook,
                        slack_signing_secret=SIGNING_SECRET, now=clock) as stack:
            logs.functions_of(stack)
            event = load_event("hyperpod-node-health")
            event["detail"]["ClusterName"] = CLUSTER
            assert stack.trigger(event)["status"] == "started"
            [arn] = stack.executions()
            stack.wait_for_state(arn, "RequestApproval")
            stack.wait_until(lambda: bool(slack.posts), timeout=10, what="the approval request on Slack")
            approval = wiring.store().approvals.get(approval_id_of(arn))
            assert approval is not None
            token = approval.task_token
            [button] = [e for b in slack.posts[0]["blocks"] if b["type"] == "actions" for e in b["elements"]
                        if e["action_id"] == "approve"]
            body = urlencode({"payload": json.dumps({"type": "block_actions", "user": {"id": "U1", "username": "al"},
                                                     "actions": [{"action_id": "approve",
                                                                  "value": button["value"]}]})})
            answer = stack.http("POST", "https://x/slack/interactions", body=body,
                                headers=slack_headers(body, clock().timestamp()))
            assert answer["statusCode"] == 200, answer
            assert stack.wait(arn)["status"] == "SUCCEEDED"
            assert "Apply" in stack.states_entered(arn)
            stack.deliver_run_events()
            notifications = [json.dumps(m) for m in stack.sns_messages()] + [json.dumps(p) for p in slack.posts]
            audit = [json.dumps(a, default=str) for a in stack.audit(CLUSTER)]
            table = boto3.resource("dynamodb", region_name=stack.region).Table(wiring.store().table_name)
            items = [json.dumps(i, default=readable) for i in table.scan()["Items"]
                     if not str(i["pk"]).startswith("APPROVAL#") or i["sk"] != "APPROVAL"]
    assert len(logs.lines) >= 3  # the functions logged (their own lines and their libraries', DEBUG included)
    assert any('"level":"DEBUG"' in line or '"level": "DEBUG"' in line for line in logs.lines)
    assert len(notifications) >= 4  # the request and the outcome, on SNS and on Slack
    assert any(a for a in audit if '"approval"' in a)
    secrets = {"Slack signing secret": SIGNING_SECRET, "Slack webhook URL": WEBHOOK_PATH,
               "approval signing key": APPROVAL_KEY, "task token": token}
    for what, secret in secrets.items():
        for where, texts in (("log", logs.lines), ("notification", notifications), ("audit", audit),
                             ("table item", items)):
            leaks = [t for t in texts if secret in t]
            assert not leaks, f"the {what} is in a {where}: {leaks[0][:300]}"
