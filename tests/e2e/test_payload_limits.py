"""One cluster at the far end of scale, through the real state machine: 1,000 teams × 15 instance types, every
quota at the API's 15 resource entries, a plan that moves the quotas of 150 teams (each loss above the policy's
limit is an approval reason), approved from Slack, applied and verified. Every state's input and output
stays under Step Functions' 256 KB limit and every DynamoDB item under 400 KB, each with a 25 % margin, however long
the lists of approval reasons, warnings and outcomes grow: the state carries the run and the small results the later
states read, the store keeps the rest."""

from __future__ import annotations

import hashlib
import hmac
import json
from collections import Counter
from typing import Any
from urllib.parse import urlencode

import boto3
import pytest
from support.emulator import in_process_emulator
from support.item_size import ITEM_LIMIT, every_item, item_size

from rebalancer.app import wiring
from rebalancer.catalog import specs as catalog
from rebalancer_tools.emulator.control import GroupSpec
from rebalancer_tools.emulator.resources import Kind
from rebalancer_tools.fakes.ticking_clock import TickingClock
from rebalancer_tools.local.stack import LocalStack, SlackReceiver

pytestmark = pytest.mark.slow

TEAMS = 1000
MOVERS = 150
NODES = 8
STATE_LIMIT = 256 * 1024  # Step Functions: a state's input or output, UTF-8
MARGIN = 0.75
SECRET = "payload-limits-slack-secret"
CLUSTER = "big-hyperpod"


def instance_types() -> list[str]:
    return sorted(t for t in catalog.known_types() if catalog.spec(t).accelerators)[:15]


def seed(emulator: Any, types: list[str]) -> None:
    """The cluster, and 1,000 quotas of 15 entries each: a team holds one accelerator of one type, while it lasts."""
    arn = emulator.create_cluster(CLUSTER, [GroupSpec(f"g{i:02d}", t, NODES) for i, t in enumerate(types)])
    for i, held in enumerate(holdings(types)):
        own = types[i % len(types)]
        emulator.gov.create(Kind.COMPUTE_QUOTA, {
            "Name": f"team-{i:04d}-quota", "ClusterArn": arn,
            "ComputeQuotaConfig": {
                "ComputeQuotaResources": [{"InstanceType": t, "Accelerators": held if t == own else 0}
                                          for t in types],
                "ResourceSharingConfig": {"Strategy": "LendAndBorrow", "BorrowLimit": 50},
                "PreemptTeamTasks": "LowerPriority"},
            "ComputeQuotaTarget": {"TeamName": f"team-{i:04d}", "FairShareWeight": 1},
            "ActivationState": "Enabled"}, "control:seed")
    emulator.settle()


def holdings(types: list[str]) -> list[int]:
    """Accelerators team i holds today on its own type (i mod 15): one, while the type's capacity lasts."""
    left = {t: NODES * catalog.spec(t).accelerators for t in types}
    out = []
    for i in range(TEAMS):
        own = types[i % len(types)]
        out.append(1 if left[own] > 0 else 0)
        left[own] -= out[-1]
    return out


def policy(types: list[str]) -> str:
    """The first MOVERS teams move (their guarantee is on the next type; each loss is an approval reason); every
    other team is guaranteed what it holds, so the run's cost stays in reading and planning 1,000 teams."""
    lines = ["mode: auto", "stability: {min_step: 1, cooldown_minutes: 0, max_move: 100000}",
             "approval: {moved_accelerators: 1, max_decrease_percent: 10, timeout_minutes: 60}", "teams:"]
    for i, held in enumerate(holdings(types)):
        own, following = types[i % len(types)], types[(i + 1) % len(types)]
        guarantee = f"{{{following}: 1}}" if i < MOVERS else (f"{{{own}: {held}}}" if held else "{}")
        lines.append(f"  team-{i:04d}: {{weight: 1, guarantee: {guarantee}}}")
    return "\n".join(lines) + "\n"


def state_payloads(history: list[dict[str, Any]]) -> list[tuple[str, int]]:
    """(event type and state, UTF-8 size) of every input, output and task parameter the execution carried."""
    out: list[tuple[str, int]] = []
    state = ""
    for e in history:
        for key, details in e.items():
            if not key.endswith("EventDetails") or not isinstance(details, dict):
                continue
            state = str(details.get("name", state))
            for field in ("input", "output", "parameters"):
                if isinstance(details.get(field), str):
                    out.append((f"{e['type']} {state}.{field}", len(details[field].encode())))
    return out


def slack_approve(stack: LocalStack, slack: SlackReceiver, now: float) -> dict[str, Any]:
    [button] = [e for b in slack.posts[0]["blocks"] if b["type"] == "actions" for e in b["elements"]
                if e["action_id"] == "approve"]
    body = urlencode({"payload": json.dumps({"type": "block_actions", "user": {"id": "U1", "username": "big"},
                                             "actions": [{"action_id": "approve", "value": button["value"]}]})})
    ts = str(int(now))
    sig = "v0=" + hmac.new(SECRET.encode(), f"v0:{ts}:{body}".encode(), hashlib.sha256).hexdigest()
    return stack.http("POST", "https://x/slack/interactions", body=body, headers={
        "X-Slack-Request-Timestamp": ts, "X-Slack-Signature": sig,
        "Content-Type": "application/x-www-form-urlencoded"})


def test_a_thousand_teams_by_fifteen_types_fit_the_state_and_item_limits(capsys: pytest.CaptureFixture[str]) -> None:
    types = instance_types()
    clock = TickingClock()
    with in_process_emulator() as emu, SlackReceiver() as slack:
        seed(emu.emulator, types)
        with LocalStack(clusters={CLUSTER: policy(types)}, slack_webhook_url=slack.url, slack_signing_secret=SECRET,
                        now=clock) as stack:
            event = json.loads((stack.root / "events" / "hyperpod-node-health.json").read_text())
            event["detail"]["ClusterName"] = CLUSTER
            assert stack.trigger(event)["status"] == "started"
            [arn] = stack.executions()
            stack.wait_for_state(arn, "RequestApproval", timeout=240)
            stack.wait_until(lambda: bool(slack.posts), timeout=30, what="the approval request on Slack")
            assert slack_approve(stack, slack, clock().timestamp())["statusCode"] == 200
            done = stack.wait(arn, timeout=480)
            assert done["status"] == "SUCCEEDED", stack.states_entered(arn)
            assert "NotifyApplied" in stack.states_entered(arn)
            payloads = state_payloads(stack.history(arn))
            table = boto3.resource("dynamodb", region_name=stack.region).Table(wiring.store().table_name)
            items = [(f"{i['pk']}/{i['sk']}", item_size(i)) for i in every_item(table)]
            plan = wiring.store().artifacts.get(arn.rsplit(":", 1)[-1], "PLAN")
    capsys.readouterr()
    moved = Counter(c["team"] for c in plan["changes"])
    largest_state = max(payloads, key=lambda p: p[1])
    largest_item = max(items, key=lambda p: p[1])
    print(f"\nlargest state payload: {largest_state[1]:,} B ({largest_state[0]}); "
          f"largest item: {largest_item[1]:,} B ({largest_item[0]}); {len(items)} items; {len(moved)} teams "
          f"changed; {len(plan['approval_reasons'])} approval reasons; {len(plan['warnings'])} warnings")
    for what, size in sorted(payloads, key=lambda p: -p[1])[:5]:
        print(f"  state {size:>9,} B  {what}")
    for what, size in sorted(items, key=lambda p: -p[1])[:5]:
        print(f"  item  {size:>9,} B  {what}")
    assert len(moved) >= 100  # the scale is real: a hundred teams and more change
    assert len(plan["approval_reasons"]) >= 100
    assert largest_state[1] < STATE_LIMIT * MARGIN, largest_state
    assert largest_item[1] < ITEM_LIMIT * MARGIN, largest_item
