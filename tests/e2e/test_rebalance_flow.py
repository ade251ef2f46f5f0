"""End to end: the real state machine definition on moto's Step Functions interpreter, every Lambda served by the
project's handlers in process, against the HyperPod emulator and a loopback Kueue API server. Notifications are
read where they arrive: SNS through an SQS subscription, Slack through a loopback server receiving the webhook POST.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from urllib.parse import urlencode, urljoin, urlsplit

import pytest
from support.approval_page import review_form
from support.approval_stack import POLICY as APPROVE
from support.clock import ticking
from support.emulator import EmulatorHandle, in_process_emulator
from support.events import load_event
from support.kube_api import KubeState, pod_set, serve, workload

from rebalancer.app import wiring
from rebalancer.app.notifications.messages import email_links
from rebalancer.app.notifications.notify import approval_id_of
from rebalancer_tools.emulator import DEMO
from rebalancer_tools.fakes.ticking_clock import TickingClock
from rebalancer_tools.local.stack import LocalStack, SlackReceiver

# Each test deploys the stack and runs executions on moto's interpreter (ANTLR-parsed ASL): seconds, not millis.
pytestmark = pytest.mark.slow

CLUSTER = DEMO.cluster_name
P5 = "ml.p5.48xlarge"
SLACK_SECRET = "e2e-slack-signing-secret"

AUTO = APPROVE.replace("mode: approve", "mode: auto")
URL = re.compile(r"https?://[^\s<>|\"']+")


@dataclass
class World:
    emu: EmulatorHandle
    kube: KubeState
    kube_url: str
    slack: SlackReceiver
    clock: TickingClock  # the functions' and the emulator's, from the fixed start T0

    def __iter__(self) -> Iterator[Any]:
        return iter((self.emu, self.kube, self.slack))


@pytest.fixture
def world() -> Iterator[World]:
    clock = ticking()
    with (in_process_emulator(seed_demo=True, clock=clock) as emu, serve() as (url, kube),
          SlackReceiver() as slack):
        # research waits for 3 × 8 H100s; training runs 8; nobody else uses ml.p5.48xlarge.
        kube.add(workload("research", "pretrain", [pod_set(3, {"nvidia.com/gpu": 8}, P5)]),
                 workload("training", "finetune", [pod_set(1, {"nvidia.com/gpu": 8}, P5)], admitted_on=P5))
        yield World(emu, kube, url, slack, clock)


def stack_for(world: World, policy: str, **kwargs: Any) -> LocalStack:
    return LocalStack(clusters={CLUSTER: policy}, kube_url=world.kube_url, slack_webhook_url=world.slack.url,
                      slack_signing_secret=SLACK_SECRET, **kwargs)


def node_event() -> dict[str, Any]:
    event = load_event("hyperpod-node-health")
    event["detail"]["ClusterName"] = CLUSTER
    return event


def quotas(emu: EmulatorHandle) -> dict[str, dict[str, Any]]:
    """team → (config, target) as DescribeComputeQuota returns them now."""
    sm = emu.sagemaker
    out = {}
    for s in sm.list_compute_quotas(ClusterArn=emu.emulator.cluster_arn(CLUSTER))["ComputeQuotaSummaries"]:
        q = sm.describe_compute_quota(ComputeQuotaId=s["ComputeQuotaId"])
        out[q["ComputeQuotaTarget"]["TeamName"]] = {"config": q["ComputeQuotaConfig"],
                                                    "target": q["ComputeQuotaTarget"],
                                                    "version": q["ComputeQuotaVersion"]}
    return out


def accelerators(q: dict[str, Any], instance_type: str) -> int:
    for r in q["config"]["ComputeQuotaResources"]:
        if r["InstanceType"] == instance_type:
            return int(r.get("Accelerators", 0))
    return 0


def run_once(stack: LocalStack) -> tuple[str, dict[str, Any]]:
    out = stack.trigger(node_event())
    assert out["status"] == "started", out
    arn = stack.executions()[-1]
    return arn, stack.wait(arn)


def stored_plan(stack: LocalStack, arn: str) -> dict[str, Any]:
    plan: dict[str, Any] = wiring.store().artifacts.get(arn.rsplit(":", 1)[-1], "PLAN")
    return plan


def kinds(stack: LocalStack) -> list[tuple[str, str]]:
    return [(a["kind"], a["outcome"]) for a in stack.audit(CLUSTER)]


def links(message: str) -> dict[str, str]:
    return email_links(message)


def test_auto_apply_then_a_second_run_changes_nothing(world: World) -> None:
    emu, _kube, slack = world
    before = quotas(emu)
    clock = world.clock
    with stack_for(world, AUTO, now=clock) as stack:
        arn, done = run_once(stack)
        assert done["status"] == "SUCCEEDED"
        assert stack.states_entered(arn) == ["Begin", "Collect", "Plan", "HasNews", "Decide", "Apply", "StartVerify",
                                             "Verify", "Verified", "Observe", "NotifyApplied", "Applied"]
        # IAM enforced (rebalancer_tools.iam.enforce): every function ran under its own role, every request allowed.
        assert stack.iam is not None
        decisions = stack.iam.decisions
        assert decisions
        assert all(d.allowed for d in decisions)
        assert {"rebalancer-TriggerFunction", "rebalancer-ClusterReaderRole", "rebalancer-PlanFunction",
                "rebalancer-ApplyFunction", "rebalancer-VerifyFunction", "rebalancer-NotifyFunction"} <= \
               {d.role for d in decisions}
        apply = {(d.action, d.resource.split(":", 5)[-1].split("/")[0]) for d in decisions
                 if d.role == "rebalancer-ApplyFunction"}
        assert ("sagemaker:UpdateComputeQuota", "compute-quota") in apply
        assert ("dynamodb:PutItem", "table") in apply
        plan = stored_plan(stack, arn)
        after = quotas(emu)
        # The emulator now holds exactly the plan's allocations, and every changed quota got a new version.
        for change in plan["changes"]:
            assert accelerators(after[change["team"]], change["instance_type"]) == change["after"], change
            assert after[change["team"]]["version"] > before[change["team"]]["version"]
        assert accelerators(after["research"], P5) > accelerators(before["research"], P5)
        assert not emu.emulator.monitor.violations(api_only=True)
        # The HyperPod event that started the run is recorded as seen (the trigger records the events it saw).
        assert kinds(stack) == [("cluster-event", "seen"), ("trigger", "started"), ("plan", "apply"),
                                ("apply", "applied"), ("notify-applied", "sent")]
        [sns] = stack.sns_messages()
        assert sns["Subject"] == f"Quotas rebalanced on {CLUSTER}"
        assert f"research {P5} accelerators: {accelerators(before['research'], P5)} -> " \
               f"{accelerators(after['research'], P5)}" in sns["Message"]
        [post] = slack.posts
        assert post["blocks"][0]["text"]["text"] == f"Quotas rebalanced on {CLUSTER}"
        assert any("research" in b.get("text", {}).get("text", "") for b in post["blocks"])

        # A retried Apply (same execution) returns the first result and writes nothing.
        run = json.loads(stack.describe(arn)["input"]) | {"execution_name": arn.rsplit(":", 1)[-1],
                                                           "execution_arn": arn}
        again = stack.invoke("apply", {"run": run})
        assert again["quota_ids"]
        assert quotas(emu) == after

        clock.advance(minutes=10)  # a new debounce window; the first run has ended, so its lock is taken over
        arn2, done2 = run_once(stack)
        assert done2["status"] == "SUCCEEDED"
        assert stack.states_entered(arn2)[-1] == "NoChange"
        assert quotas(emu) == after
        assert stack.sns_messages() == []


def test_approval_by_signed_link(world: World) -> None:
    emu, _kube, slack = world
    with stack_for(world, APPROVE) as stack:
        stack.trigger(node_event())
        [arn] = stack.executions()
        stack.wait_for_state(arn, "RequestApproval")
        stack.wait_until(lambda: bool(slack.posts), timeout=10, what="the approval request on Slack")
        [request] = stack.sns_messages()
        assert request["Subject"] == f"Approval needed: quota changes on {CLUSTER}"
        url = links(request["Message"])
        before = quotas(emu)

        # Mail scanners and chat unfurlers open every link of a message: each of ours, in the SNS text and in the
        # Slack blocks, opened (GET and HEAD) as they would, changes nothing, and the real form decides afterwards.
        every = set(URL.findall(str(request["Message"]))) | {u for p in slack.posts for u in _urls(p)}
        ours = {u for u in every if u.startswith(stack.approval_api_url)}
        assert set(url.values()) <= ours  # the SNS text's approve and reject links
        assert {urlsplit(u).netloc for u in every - ours} <= {"us-east-1.console.aws.amazon.com"}  # read-only
        statuses = {}
        for opened in sorted(ours):
            statuses[opened] = stack.http("GET", opened)["statusCode"]
            statuses[opened + " (HEAD)"] = stack.http("HEAD", opened)["statusCode"]

        forged = url["Approve"].replace("decision=approve", "decision=reject")
        assert stack.http("GET", forged)["statusCode"] == 403
        page = stack.http("GET", url["Approve"])
        assert page["statusCode"] == 200
        action, fields = review_form(page["body"])
        decision_url = urljoin(url["Approve"], action)
        statuses["decision address"] = stack.http("GET", decision_url)["statusCode"]
        assert set(statuses.values()) <= {200, 405}
        assert statuses["decision address"] == 405
        assert stack.describe(arn)["status"] == "RUNNING"
        assert stack.states_entered(arn)[-1] == "RequestApproval"
        assert wiring.store().approvals.get(approval_id_of(arn)).status == "pending"
        assert [a for a in stack.audit(CLUSTER) if a["kind"] == "approval"] == []
        assert quotas(emu) == before  # showing the page, and every other link, decides nothing
        decided = stack.http("POST", decision_url, form={**fields, "decision": "approve", "name": "alice"})
        assert decided["statusCode"] == 200, decided["body"]
        done = stack.wait(arn)
        assert done["status"] == "SUCCEEDED"
        assert "Apply" in stack.states_entered(arn)
        assert stack.states_entered(arn)[-1] == "Applied"
        replay = stack.http("POST", decision_url, form={**fields, "decision": "approve", "name": "alice"})
        assert replay["statusCode"] == 409
        assert "already submitted" in replay["body"]
        assert "already approved" in stack.http("GET", url["Approve"])["body"]

        audit = stack.audit(CLUSTER)
        [approval] = [a for a in audit if a["kind"] == "approval"]
        assert (approval["outcome"], approval["who"]) == ("approved", "alice")
        [applied] = stack.sns_messages()
        assert "Decided by: alice" in applied["Message"]
        assert quotas(emu) != before
        buttons = [e["action_id"] for b in slack.posts[0]["blocks"] if b["type"] == "actions" for e in b["elements"]]
        assert buttons[:2] == ["approve", "reject"]


def _urls(node: Any) -> list[str]:
    """Every URL anywhere in a Slack payload: button `url`s and links inside texts."""
    if isinstance(node, dict):
        return [u for v in node.values() for u in _urls(v)]
    if isinstance(node, list):
        return [u for v in node for u in _urls(v)]
    return URL.findall(node) if isinstance(node, str) else []


def _slack_request(body: str, secret: str, now: datetime) -> dict[str, str]:
    ts = str(int(now.timestamp()))
    sig = "v0=" + hmac.new(secret.encode(), f"v0:{ts}:{body}".encode(), hashlib.sha256).hexdigest()
    return {"X-Slack-Request-Timestamp": ts, "X-Slack-Signature": sig,
            "Content-Type": "application/x-www-form-urlencoded"}


def test_why_then_rejection_from_slack_changes_nothing(world: World) -> None:
    emu, _kube, slack = world
    clock = world.clock
    with stack_for(world, APPROVE, now=clock) as stack:
        before = quotas(emu)
        stack.trigger(node_event())
        [arn] = stack.executions()
        stack.wait_for_state(arn, "RequestApproval")
        stack.wait_until(lambda: bool(slack.posts), timeout=10, what="the approval request on Slack")

        # `/rebalancer why` while the run waits: the signed slash command reaches the approval function, which runs
        # with its template role's policy enforced and reads only the table.
        command = urlencode({"command": "/rebalancer", "text": "why research", "user_id": "U1", "team_id": "T1",
                             "response_url": "https://hooks.slack.com/commands/T1/1/x"})
        assert stack.http("POST", "https://x/slack/commands", body=command)["statusCode"] == 401  # unsigned
        answer = stack.http("POST", "https://x/slack/commands", body=command,
                            headers=_slack_request(command, SLACK_SECRET, clock()))
        assert answer["statusCode"] == 200, answer
        doc = json.loads(answer["body"])
        assert doc["response_type"] == "ephemeral"
        assert doc["text"] == f"Why: research on {CLUSTER}: 1 pending"
        texts = [b["text"]["text"] for b in doc["blocks"] if b["type"] == "section"]
        planned = stored_plan(stack, arn)["allocations"]["research"][P5]["accelerators"]
        assert f"the latest plan makes it {planned:g}" in texts[0]
        # the plan step stored the run's outlook: the team's standing over the window, and when the gang may start
        assert texts[1].startswith("*Standing over the last 168 h*\n")
        assert texts[2].startswith(f"*workload pretrain on {P5}: 24 accelerators in 3 pods")
        assert "\n_When:_ " in texts[2]

        [reject] = [e for b in slack.posts[0]["blocks"] if b["type"] == "actions" for e in b["elements"]
                    if e["action_id"] == "reject"]
        payload = {"type": "block_actions", "user": {"id": "U1", "username": "bob"},
                   "actions": [{"action_id": "reject", "value": reject["value"]}]}
        body = urlencode({"payload": json.dumps(payload)})
        unsigned = stack.http("POST", "https://x/slack/interactions", body=body)
        assert unsigned["statusCode"] == 401
        answer = stack.http("POST", "https://x/slack/interactions", body=body,
                            headers=_slack_request(body, SLACK_SECRET, clock()))
        assert answer["statusCode"] == 200
        assert "rejected" in json.loads(answer["body"])["text"]
        done = stack.wait(arn)
        assert done["status"] == "SUCCEEDED"
        assert stack.states_entered(arn)[-2:] == ["NotifyRejected", "Rejected"]
        assert quotas(emu) == before
        assert ("approval", "rejected") in kinds(stack)
        assert [a["who"] for a in stack.audit(CLUSTER) if a["kind"] == "approval"] == ["slack:bob"]
        messages = {m["kind"]: m for m in stack.sns_messages()}  # SQS keeps no order
        assert sorted(messages) == ["approval_request", "rejected"]
        assert "Decided by: slack:bob" in messages["rejected"]["Message"]


def test_approval_timeout_expires_and_a_late_click_changes_nothing(world: World) -> None:
    emu, _kube, _slack = world
    # The policy's smallest timeout is a minute; the plan's output is shortened so the test does not wait for it.
    shorten = {"plan": lambda out: {**out, "approval_timeout_seconds": 1}}
    clock = world.clock  # the functions' clock; the state machine's timeout runs on real time
    with stack_for(world, APPROVE, hooks=shorten, now=clock) as stack:
        before = quotas(emu)
        stack.trigger(node_event())
        [arn] = stack.executions()
        done = stack.wait(arn)
        assert done["status"] == "SUCCEEDED"
        assert stack.states_entered(arn)[-3:] == ["RequestApproval", "NotifyExpired", "Expired"]
        timed_out = [e for e in stack.history(arn) if e["type"] == "TaskTimedOut"]
        assert timed_out
        messages = {m["kind"]: m for m in stack.sns_messages()}  # SQS keeps no order
        assert sorted(messages) == ["approval_request", "expired"]
        clock.advance(minutes=1)  # the admin clicks a minute after the deadline
        late = stack.http("GET", links(messages["approval_request"]["Message"])["Approve"])
        assert late["statusCode"] == 410  # the link has expired
        assert quotas(emu) == before


def test_apply_failing_midway_is_rolled_back_to_the_exact_before_state(world: World) -> None:
    emu, _kube, slack = world
    with stack_for(world, AUTO) as stack:
        before = quotas(emu)
        emu.emulator.inject("update-failed", "UpdateComputeQuota", skip=2)
        arn, done = run_once(stack)
        assert done["status"] == "FAILED"
        assert done["error"] == "RebalanceRolledBack"
        entered = stack.states_entered(arn)
        assert entered[-4:] == ["Apply", "Rollback", "NotifyRolledBack", "RolledBack"]
        after = quotas(emu)
        assert {t: (q["config"], q["target"]) for t, q in after.items()} == \
               {t: (q["config"], q["target"]) for t, q in before.items()}
        assert not emu.emulator.monitor.violations(api_only=True)
        assert [k for k in kinds(stack) if k[0] in ("apply", "rollback")] == [("apply", "failed"),
                                                                              ("rollback", "restored")]
        [sns] = stack.sns_messages()
        assert sns["Subject"] == f"Rebalance of {CLUSTER} failed and was rolled back"
        assert "Error: ApplyFailed" in sns["Message"]
        assert slack.posts[-1]["blocks"][0]["text"]["text"] == sns["Subject"]


@pytest.mark.parametrize("status", ["CreateFailed", "CreateRollbackFailed"])
def test_a_created_quota_that_fails_is_deleted_by_the_rollback(world: World, status: str) -> None:
    emu, _kube, _slack = world
    # Created without an admin (approval.new_teams off): the test is about the rollback of a failed create.
    policy = AUTO.replace("max_decrease_percent: 100}", "max_decrease_percent: 100, new_teams: false}") \
    + "  vision: {weight: 1, guarantee: {ml.p5.48xlarge: 4}}\n"
    with stack_for(world, policy) as stack:
        before = quotas(emu)
        assert "vision" not in before
        emu.emulator.inject("failed", "CreateComputeQuota", status=status, reason="no room for team vision")
        _arn, done = run_once(stack)
        assert done["status"] == "FAILED"
        assert done["error"] == "RebalanceRolledBack"
        after = quotas(emu)
        assert "vision" not in after  # nothing of the run is left: the failed quota was deleted too
        assert {t: (q["config"], q["target"]) for t, q in after.items()} == \
               {t: (q["config"], q["target"]) for t, q in before.items()}
        [sns] = stack.sns_messages()
        assert status in sns["Message"]
        assert "no room for team vision" in sns["Message"]


def test_bad_events_start_nothing_observe_publishes_and_a_burst_of_fifty_duplicates_starts_one_execution(
        world: World, capsys: pytest.CaptureFixture[str]) -> None:
    """One stack, three edges of the trigger and the observer, in the order that keeps each one's premise: no run
    yet while the bad events and the observer are checked, then the burst."""
    with stack_for(world, APPROVE) as stack:
        # Malformed and foreign events start nothing and are counted.
        capsys.readouterr()
        foreign = node_event()
        foreign["detail"]["ClusterName"] = "someone-elses-cluster"
        results = [stack.trigger(load_event("malformed-missing-detail")),
                   stack.trigger(load_event("malformed-unknown-type")),
                   stack.trigger({"not": "an event"}),
                   stack.trigger(foreign)]
        assert [r["status"] for r in results] == ["malformed", "malformed", "malformed", "ignored"]
        assert results[0]["event_id"] == "bad-00000001"
        assert stack.executions() == []
        emitted = [json.loads(line) for line in capsys.readouterr().out.splitlines() if '"_aws"' in line]
        assert sum(m.get("MalformedEvents", [0])[0] for m in emitted if "MalformedEvents" in m) == 3
        assert sum(1 for m in emitted if "EventsIgnored" in m) == 1

        # Observe publishes the metrics the alarms watch.
        result = stack.invoke("observe", load_event("scheduled"))
        emitted = [json.loads(line) for line in capsys.readouterr().out.splitlines() if '"_aws"' in line]
        samples = list(wiring.store().samples.since(CLUSTER))  # the backtest's history: one demand sample per run
        assert len(samples) == 1
        assert samples[0].teams["research"]["ml.p5.48xlarge"].pending == 24
        # research waits for 24 H100s while data-science and inference hold 8 idle ones (training uses its 8 of 12).
        assert result[CLUSTER]["stranded"] > 0
        cluster_level = [m for m in emitted if "StrandedAccelerators" in m]
        assert [m["StrandedAccelerators"] for m in cluster_level] == [[result[CLUSTER]["stranded"]]]
        assert cluster_level[0]["service"] == "hyperpod-rebalancer"
        pending = {m["Team"]: m["PendingAccelerators"] for m in emitted if "PendingAccelerators" in m}
        assert pending["research"] == [24.0]

        # A burst of fifty duplicate events starts one execution.
        event = node_event()
        with ThreadPoolExecutor(max_workers=8) as pool:
            outcomes = list(pool.map(lambda _: stack.trigger(event), range(50)))
        statuses = [o["status"] for o in outcomes]
        assert statuses.count("started") == 1
        assert statuses.count("debounced") == 49
        [arn] = stack.executions()
        stack.wait_for_state(arn, "RequestApproval")
        assert [a["kind"] for a in stack.audit(CLUSTER)].count("trigger") == 1


def test_an_invalid_policy_stops_the_run_with_a_notification_naming_the_error(world: World) -> None:
    emu, _kube, _slack = world
    with stack_for(world, AUTO.replace("weight: 3", "weight: -3", 1)) as stack:
        before = quotas(emu)
        arn, done = run_once(stack)
        assert (done["status"], done["error"]) == ("FAILED", "RebalanceFailed")
        assert stack.states_entered(arn)[-3:] == ["Plan", "NotifyFailed", "Failed"]
        [sns] = stack.sns_messages()
        assert sns["Subject"] == f"Rebalance of {CLUSTER} stopped before changing anything"
        assert f"Error: InvalidInput: ssm:/hyperpod-rebalancer/policy/{CLUSTER}: teams.research.weight: " \
            in sns["Message"]
        assert quotas(emu) == before
        assert ("plan", "invalid-policy") in kinds(stack)


def test_a_node_failing_while_the_cuts_settle_gets_no_raise_above_what_is_left(world: World) -> None:
    """The real state machine: Apply cuts quotas, and a node of ml.p5.48xlarge fails while it waits for the cuts to
    settle. The raises that no longer fit the healthy capacity read after that wait are not written; the run fails
    to Rollback, which restores only what fits, and the audit names the writes left and why."""
    emu, _kube, _slack = world
    with stack_for(world, AUTO) as stack:
        emu.emulator.inject("node-failure", "DescribeComputeQuota", cluster=CLUSTER, node="gpu-p5-0")
        arn, done = run_once(stack)
        assert done["status"] == "FAILED"
        assert stack.states_entered(arn)[-4:] == ["Apply", "Rollback", "NotifyRollbackFailed", "RollbackFailed"]
        assert emu.emulator.monitor.raised_above_capacity() == []
        assert sum(accelerators(q, P5) for q in quotas(emu).values()) <= 24  # 3 of the 4 nodes left
        records = {r["kind"]: r for r in stack.audit(CLUSTER)}
        assert records["apply"]["outcome"] == "failed"
        assert records["apply"]["detail"]["left"] == {"research": (
            f"{P5}: the enabled quotas would hold 32, the cluster has 24 healthy (it had 32 when this pass of "
            "writes began)")}
        # Restoring training's 12 would raise the pool above the 24 left: the rollback leaves it cut, and says so.
        assert records["rollback"]["outcome"] == "incomplete"
        assert "training" in records["rollback"]["detail"]["left"]
