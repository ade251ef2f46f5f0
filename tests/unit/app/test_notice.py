"""Notice before reclaim (rebalancer.app.workflow.notice): a plan that would preempt running work is decided
`notice`, the teams are told (every outlet, and each team's own topic with its own workloads only), and after the
wait the plan is checked again: written when the notice named all it would preempt, noticed again when a workload it
did not name would now be preempted, the run stopped after MAX_NOTICE_ROUNDS. Then what Kueue preempted is compared
with what the plan named, and the run records both."""

from __future__ import annotations

from datetime import timedelta

import pytest
from support.clusters import T0, policy, snapshot
from support.preempting import OPEN, P5, H, full

from rebalancer.app.notifications.messages import DeliveryResult, Message
from rebalancer.app.notifications.notify import notify
from rebalancer.app.workflow import state
from rebalancer.app.workflow.notice import MAX_NOTICE_ROUNDS, load_notice
from rebalancer.app.workflow.preempted import record_preempted
from rebalancer.app.workflow.state import NotifyInput, Recheck, RunRef
from rebalancer.app.workflow.steps.plan import plan as plan_step
from rebalancer.domain.plan import PREEMPTIONS_LISTED
from rebalancer.domain.policy import Policy
from rebalancer.domain.snapshot import PendingWorkload, RunningWorkload, Snapshot
from rebalancer_tools.fakes.memory_store import MemoryStore
from rebalancer_tools.fakes.ticking_clock import TickingClock

RUN = RunRef(cluster_name="test", execution_name="run-1", execution_arn="arn:aws:states:::execution:sm:run-1")
B_TOPIC = "arn:aws:sns:us-east-1:123456789012:rebalancer-team-b"
POLICY = policy({"a": {}, "b": {"notice_topic": B_TOPIC}}, approval=OPEN, reclaim={"notice_minutes": 15})


class Outlet:
    """A channel that keeps what it was sent."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.sent: list[Message] = []

    def send(self, message: Message) -> DeliveryResult:
        self.sent.append(message)
        return DeliveryResult(self.name, True)


@pytest.fixture
def store() -> MemoryStore:
    s = MemoryStore(now=TickingClock(T0))
    state.record_snapshot(s.artifacts, RUN, full())
    return s


def planned(store: MemoryStore, the_policy: Policy = POLICY) -> dict[str, object]:
    return plan_step(RUN, store=store, load_policy=lambda _: the_policy, now=T0)


def rechecked(store: MemoryStore, snap: Snapshot, minutes: int = 15) -> dict[str, object]:
    later = snap.model_copy(update={"taken_at": T0 + timedelta(minutes=minutes)})
    state.record_snapshot(store.artifacts, RUN, later, again=True)
    return plan_step(RUN, store=store, load_policy=lambda _: POLICY, now=T0 + timedelta(minutes=minutes),
                     recheck=Recheck(approval_round=1))


def newer_admitted(snap: Snapshot) -> Snapshot:
    """b-new ended during the notice and b admitted b-newer in its place: now the newest, what Kueue takes."""
    runs = [w for w in snap.running_workloads if w.name != "b-new"]
    runs.append(RunningWorkload(name="b-newer", team="b", pool=P5, accelerators=8, pods=1,
                                started=T0 + timedelta(minutes=5)))
    return snap.model_copy(update={"running_workloads": tuple(runs)})


def test_a_plan_that_preempts_tells_the_teams_and_waits(store: MemoryStore) -> None:
    result = planned(store)
    assert (result["decision"], result["notice_seconds"]) == ("notice", 900)
    notice = load_notice(store.artifacts, RUN)
    assert notice is not None
    assert (notice.named, notice.targets, notice.round) == ((f"b/b-new@{P5}",), {"b": B_TOPIC}, 1)
    # no preemption, no notice: the same cluster with b running only what a's raise leaves it
    quiet = MemoryStore(now=TickingClock(T0))
    state.record_snapshot(quiet.artifacts, RUN, full((("b-old", 8, 3 * H),)))
    assert planned(quiet)["decision"] == "apply"


def test_the_notice_goes_to_every_outlet_and_to_the_teams_own_topic(store: MemoryStore) -> None:
    planned(store)
    sns, slack, teams = Outlet("sns"), Outlet("slack"), []

    def team_channel(team: str, topic: str) -> Outlet:
        outlet = Outlet(f"sns:{team}")
        teams.append((team, topic, outlet))
        return outlet

    out = notify(NotifyInput(run=RUN, kind="notice"), store=store, channels=[sns, slack],  # type: ignore[list-item]
                 team_channel=team_channel)  # type: ignore[arg-type]
    assert out["sent"] == ["sns", "slack", "sns:b"]
    (message,) = sns.sent
    assert message.kind == "notice"
    assert [p.workload for p in message.preemptions] == ["b-new"]
    assert "written in 15 minutes at the earliest" in message.notes[-1]
    ((team, topic, outlet),) = teams
    (own,) = outlet.sent
    assert (team, topic, [p.workload for p in own.preemptions], own.changes) == ("b", B_TOPIC, ["b-new"], ())
    assert [r["outcome"] for r in store.audit.records("test") if r["kind"] == "notify-notice"] == ["sent"]


def test_after_the_wait_the_plan_is_written_when_the_notice_named_all_it_preempts(store: MemoryStore) -> None:
    planned(store)
    assert rechecked(store, full())["decision"] == "apply"


def test_a_workload_the_notice_did_not_name_is_never_preempted_unnoticed(store: MemoryStore) -> None:
    planned(store)
    result = rechecked(store, newer_admitted(full()))
    assert result["decision"] == "notice"
    assert any("not named by the notice: b/b-newer" in n for n in result["notes"])  # type: ignore[attr-defined]
    notice = load_notice(store.artifacts, RUN)
    assert notice is not None
    assert (notice.named, notice.round) == ((f"b/b-newer@{P5}",), 2)
    assert [p.workload for p in state.load_plan(store.artifacts, RUN).preemptions] == ["b-newer"]
    assert rechecked(store, newer_admitted(full()), minutes=30)["decision"] == "apply"  # now it was named


def test_a_cluster_that_keeps_moving_under_notices_stops_the_run(store: MemoryStore) -> None:
    planned(store)
    snap = full()
    for i in range(MAX_NOTICE_ROUNDS):
        runs = [*snap.running_workloads[:1], RunningWorkload(name=f"b-{i}", team="b", pool=P5, accelerators=8,
                                                             pods=1, started=T0 + timedelta(minutes=i + 1))]
        snap = snap.model_copy(update={"running_workloads": tuple(runs)})
        decision = rechecked(store, snap, minutes=15 * (i + 1))["decision"]
    assert decision == "stale"


def test_what_kueue_preempted_is_recorded_beside_what_the_plan_named(store: MemoryStore) -> None:
    planned(store)
    after = full().model_copy(update={
        "running_workloads": (full().running_workloads[0],),
        "pending_workloads": (PendingWorkload(name="b-new", team="b", pool=P5, accelerators=8, pods=1,
                                              created=T0 - 2 * H),)})
    seen = record_preempted(store, RUN, after)
    assert (seen["named"], seen["preempted"]) == ([f"b/b-new@{P5}"], [f"b/b-new@{P5}"])
    (rec,) = [r for r in store.audit.records("test") if r["kind"] == "preempted"]
    assert (rec["outcome"], rec["before"], rec["after"]) == ("as_named", [f"b/b-new@{P5}"], [f"b/b-new@{P5}"])
    # Kueue took b-old instead: recorded as differing, with both lists
    other = after.model_copy(update={
        "running_workloads": (full().running_workloads[1],),
        "pending_workloads": (PendingWorkload(name="b-old", team="b", pool=P5, accelerators=8, pods=1,
                                              created=T0 - 4 * H),)})
    record_preempted(store, RUN, other)
    rec = [r for r in store.audit.records("test") if r["kind"] == "preempted"][-1]
    assert (rec["outcome"], rec["detail"]["not_named"], rec["detail"]["named_not_preempted"]) == (
        "differs", [f"b/b-old@{P5}"], [f"b/b-new@{P5}"])


def test_a_notice_names_every_workload_it_preempts_not_only_those_the_plan_lists() -> None:
    n = PREEMPTIONS_LISTED + 20  # a multiple of 8: b fills every node
    snap = snapshot({P5: n // 8}, quotas={"a": {P5: 0}, "b": {P5: n}}, in_use={"b": {P5: n}}, pending={"a": {P5: n}})
    snap = snap.model_copy(update={
        "running_workloads": tuple(RunningWorkload(name=f"b-{i:03d}", team="b", pool=P5, accelerators=1, pods=1,
                                                   started=T0 - timedelta(minutes=i + 1)) for i in range(n)),
        "pending_workloads": (PendingWorkload(name="a-1", team="a", pool=P5, accelerators=n, pods=1,
                                              created=T0 - H),)})
    pol = policy({"a": {"guarantee": {P5: n}}, "b": {}}, approval={**OPEN, "moved_accelerators": 1000},
                 stability={"max_move": None})
    store = MemoryStore(now=TickingClock(T0))
    state.record_snapshot(store.artifacts, RUN, snap)
    assert plan_step(RUN, store=store, load_policy=lambda _: pol, now=T0)["decision"] == "notice"
    assert state.load_plan(store.artifacts, RUN).preemptions_unlisted == 20
    notice = load_notice(store.artifacts, RUN)
    assert notice is not None
    assert len(notice.named) == n
    state.record_snapshot(store.artifacts, RUN, snap.model_copy(update={"taken_at": T0 + timedelta(minutes=1)}),
                          again=True)
    after = plan_step(RUN, store=store, load_policy=lambda _: pol, now=T0 + timedelta(minutes=1),
                      recheck=Recheck(approval_round=1))
    assert after["decision"] == "apply"
