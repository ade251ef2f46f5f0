"""End to end through the real state machine on the emulator, IAM enforced: an approved reservation raises its
team's quota from the first run inside its window, with the reservation as the reason; its start and its end are
announced once each on SNS and Slack; the first run after its end brings the quota back to the policy."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta

import boto3
import pytest
from support.clock import ticking
from support.emulator import EmulatorHandle, in_process_emulator
from support.events import load_event
from support.kube_api import pod_set, serve, workload

from rebalancer.adapters.dynamodb.store import Store
from rebalancer.app import wiring
from rebalancer.domain.reservation import Reservation
from rebalancer_tools.emulator import DEMO
from rebalancer_tools.fakes.ticking_clock import TickingClock
from rebalancer_tools.local.stack import LocalStack, SlackReceiver

pytestmark = pytest.mark.slow

CLUSTER = DEMO.cluster_name
P5 = "ml.p5.48xlarge"
POLICY = """
mode: auto
stability: {cooldown_minutes: 0, max_move: 64}
approval: {moved_accelerators: 1000, max_decrease_percent: 100}
teams:
  research: {weight: 3, guarantee: {ml.p5.48xlarge: 4}}
  training: {weight: 3, guarantee: {ml.p5.48xlarge: 4}}
  inference: {weight: 2, guarantee: {ml.p5.48xlarge: 4}}
  data-science: {weight: 1}
  platform: {weight: 1}
"""


def p5_quota(emu: EmulatorHandle, team: str) -> int:
    return emu.accelerators(CLUSTER, team, P5) or 0


@contextmanager
def stack_at(clock: TickingClock) -> Iterator[tuple[LocalStack, EmulatorHandle, SlackReceiver, TickingClock]]:
    with (in_process_emulator(seed_demo=True, clock=clock) as emu, serve() as (url, kube),
          SlackReceiver() as slack):
        kube.add(workload("research", "pretrain", [pod_set(4, {"nvidia.com/gpu": 8}, P5)]))  # wants all 32
        with LocalStack(clusters={CLUSTER: POLICY}, kube_url=url, slack_webhook_url=slack.url, now=clock) as stack:
            yield stack, emu, slack, clock


@pytest.fixture
def flow() -> Iterator[tuple[LocalStack, EmulatorHandle, SlackReceiver, TickingClock]]:
    with stack_at(ticking()) as world:
        yield world


def run(stack: LocalStack, clock: TickingClock, minutes: float) -> None:
    clock.advance(minutes=minutes)
    event = load_event("hyperpod-node-health")
    event["detail"]["ClusterName"] = CLUSTER
    assert stack.trigger(event)["status"] == "started"
    done = stack.wait(stack.executions()[-1])
    assert done["status"] == "SUCCEEDED", done


def subjects(stack: LocalStack) -> list[tuple[str, str]]:
    return [(m["Subject"], m["Message"]) for m in stack.sns_messages()]


def test_a_reservation_holds_its_window_and_is_announced_at_both_ends(
        flow: tuple[LocalStack, EmulatorHandle, SlackReceiver, TickingClock]) -> None:
    stack, emu, slack, clock = flow
    store = Store(wiring.store().table_name, resource=boto3.resource("dynamodb", region_name=stack.region))
    start = clock() + timedelta(minutes=10)
    store.reservations.put(Reservation(
        reservation_id="r-e2e", cluster=CLUSTER, team="data-science", pool=P5, accelerators=16, start=start,
        until=start + timedelta(hours=2), reason="launch", status="approved", requested_by="alice",
        requested_at=clock()))

    run(stack, clock, 0)  # before its start: research takes what the guarantees leave
    assert p5_quota(emu, "data-science") == 0
    assert not [s for s, _ in subjects(stack) if s.startswith("Reservation")]

    run(stack, clock, 15)  # inside the window
    assert p5_quota(emu, "data-science") == 16
    messages = subjects(stack)
    [started] = [body for s, body in messages if s == f"Reservation started on {CLUSTER}"]
    assert "reservation r-e2e for launch until" in started
    assert "data-science is guaranteed at least 16 of ml.p5.48xlarge" in started
    applied = next(body for s, body in messages if s.startswith("Quotas rebalanced"))
    assert "data-science ml.p5.48xlarge accelerators: 0 -> 16 (" in applied
    assert "reservation r-e2e for launch until" in applied.split("data-science ml.p5.48xlarge", 1)[1]

    run(stack, clock, 30)  # still inside: nothing to say again, nothing to change
    assert not [s for s, _ in subjects(stack) if s.startswith("Reservation")]
    assert p5_quota(emu, "data-science") == 16

    run(stack, clock, 120)  # past its end: the schedule's next run brings the quota back
    assert p5_quota(emu, "data-science") == 0
    [ended] = [body for s, body in subjects(stack) if s.startswith("Reservation ended")]
    assert "r-e2e" in ended
    assert "returns to the policy" in ended
    posts = [p["blocks"][0]["text"]["text"] for p in slack.posts]
    assert [t for t in posts if t.startswith("Reservation")] == [
        f"Reservation started on {CLUSTER}", f"Reservation ended on {CLUSTER}: quotas return to the policy"]
    steps = [(r["outcome"]) for r in store.audit.records(CLUSTER) if r["kind"] == "reservation"]
    assert steps == ["started:approved", "ended:approved"]


def test_a_window_that_opens_on_a_run_with_nothing_to_change_is_announced_all_the_same(
        flow: tuple[LocalStack, EmulatorHandle, SlackReceiver, TickingClock]) -> None:
    """The plan step plans and Notify announces: a run whose plan changes nothing still goes through Announce."""
    stack, emu, _slack, clock = flow
    store = Store(wiring.store().table_name, resource=boto3.resource("dynamodb", region_name=stack.region))
    run(stack, clock, 0)
    held = p5_quota(emu, "research")
    assert held >= 8
    store.reservations.put(Reservation(
        reservation_id="r-quiet", cluster=CLUSTER, team="research", pool=P5, accelerators=8,
        start=clock() + timedelta(minutes=10), until=clock() + timedelta(hours=2), reason="evaluation",
        status="approved", requested_by="alice", requested_at=clock()))
    stack.sns_messages()

    run(stack, clock, 15)  # inside the window: research holds more than it reserves, nothing to change
    arn = stack.executions()[-1]
    assert stack.states_entered(arn)[-5:] == ["Plan", "HasNews", "Announce", "Decide", "NoChange"]
    assert p5_quota(emu, "research") == held
    assert [s for s, _ in subjects(stack)] == [f"Reservation started on {CLUSTER}"]
    run(stack, clock, 15)  # said once
    assert stack.states_entered(stack.executions()[-1])[-3:] == ["HasNews", "Decide", "NoChange"]
    assert subjects(stack) == []


def run_at(stack: LocalStack, clock: TickingClock, at: datetime) -> None:
    """The schedule's run at `at` (UTC)."""
    clock.advance(minutes=(at - clock()).total_seconds() / 60)
    run(stack, clock, 0)


def test_a_recurring_windows_quota_is_in_place_when_it_opens_before_and_after_the_dst_change() -> None:
    """Mon-Fri 18:00-08:00 Europe/Berlin, lead 30 min: Friday 23 Oct 2026 (summer time) the window opens at 16:00
    UTC, Monday 26 Oct (winter time) at 17:00 UTC. Runs on the 15-minute schedule's ticks around each opening."""
    start = datetime(2026, 10, 23, 12, 0, tzinfo=UTC)
    with stack_at(TickingClock(start)) as (stack, emu, slack, clock):
        store = Store(wiring.store().table_name, resource=boto3.resource("dynamodb", region_name=stack.region))
        store.reservations.put(Reservation(
            reservation_id="r-nightly", cluster=CLUSTER, team="data-science", pool=P5, accelerators=16, start=start,
            until=start + timedelta(days=7), reason="nightly evaluation", status="approved", requested_by="alice",
            requested_at=start, every="Mon-Fri 18:00-08:00", timezone="Europe/Berlin", lead_minutes=30))
        seen = {}
        for at in ("2026-10-23T15:15Z",  # before Friday's lead: the policy's quota
                   "2026-10-23T15:45Z",  # inside it, 15 min before the window opens at 16:00 UTC (18:00 CEST)
                   "2026-10-24T06:15Z",  # Saturday after 08:00 CEST: back to the policy
                   "2026-10-26T16:15Z",  # Monday: 17:15 CET, 45 min before it opens; in summer it would be open
                   "2026-10-26T16:45Z"):  # inside Monday's lead, 15 min before 18:00 CET (17:00 UTC)
            run_at(stack, clock, datetime.fromisoformat(at))
            seen[at] = p5_quota(emu, "data-science")
        assert seen == {"2026-10-23T15:15Z": 0, "2026-10-23T15:45Z": 16, "2026-10-24T06:15Z": 0,
                        "2026-10-26T16:15Z": 0, "2026-10-26T16:45Z": 16}
        posts = [p["blocks"][0]["text"]["text"] for p in slack.posts]
        assert [t for t in posts if t.startswith("Reservation")] == [
            f"Reservation started on {CLUSTER}", f"Reservation ended on {CLUSTER}: quotas return to the policy",
            f"Reservation started on {CLUSTER}"]
        started = [body for s, body in subjects(stack) if s == f"Reservation started on {CLUSTER}"]
        assert "window of Fri 23 Oct 18:00" in started[0]
        assert "window of Mon 26 Oct 18:00" in started[1]
        assert "(the window opens at 17:00 UTC)" in started[1]
