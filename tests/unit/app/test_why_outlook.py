"""The plan step stores each run's outlook beside its plan (the estimated starts, the teams' standings) and keeps
the run history the durations come from; `why` answers with both, the same in text, JSON and Slack's blocks, and
as before for a run stored without one. Past the step's deadline the forecasts stop and the outlook says so, the
plan stored all the same."""

from __future__ import annotations

from datetime import timedelta

from support.clock import ticking
from support.clusters import T0, policy
from support.why_runs import CLUSTER, P5, SECOND, record_runs, run, waiting_snapshot

from rebalancer.app.approvals.slash_command import message
from rebalancer.app.why import why
from rebalancer.app.workflow import run_plan, state
from rebalancer.app.workflow.outlook import outlook_of
from rebalancer.app.workflow.steps.plan import plan
from rebalancer.budgets.metering import Reading
from rebalancer.domain.outlook import Outcome, Outlook, RunHistory
from rebalancer.domain.snapshot import PendingWorkload, RunningWorkload
from rebalancer.forecast.deadline import Deadline
from rebalancer.planning import eta
from rebalancer_tools.fakes.memory_store import MemoryStore

THIRD = "test-0003"
POLICY = policy({"a": {}, "b": {"weight": 3}})


def stored_run(store: MemoryStore, outcomes: tuple[Outcome, ...] = ()) -> None:
    """Run 3 through the plan step: a's 16-GPU gang waits; b runs 20 of 24 since 2 h ago, a 8 since 1 h; b's
    runs have lasted 3 h, a's 1 h; over the week a received 100 accelerator-hours of p5, b 300; `outcomes`: how the
    estimates of earlier runs turned out."""
    snap = waiting_snapshot().model_copy(update={"running_workloads": (
        RunningWorkload(name="a-0", team="a", pool=P5, accelerators=8, pods=1, started=T0 - timedelta(hours=1)),
        RunningWorkload(name="b-0", team="b", pool=P5, accelerators=20, pods=3, started=T0 - timedelta(hours=2)))})
    state.record_snapshot(store.artifacts, run(THIRD), snap)
    store.durations.record(CLUSTER, RunHistory(finished={"a": (3600.0,) * 10, "b": (3 * 3600.0,) * 10},
                                               outcomes=outcomes))
    store.meter.record(CLUSTER, Reading(at=T0 - timedelta(hours=1), rates={"a": {P5: (100.0, 0.0)},
                                                                          "b": {P5: (300.0, 0.0)}}),
                       timedelta(hours=2))
    store.meter.record(CLUSTER, Reading(at=T0, rates={"a": {P5: (100.0, 0.0)}, "b": {P5: (300.0, 0.0)}}),
                       timedelta(hours=2))
    plan(run(THIRD), store=store, load_policy=lambda _: POLICY.model_copy(update={"mode": "dry-run"}), now=T0)


def test_the_plan_step_stores_the_outlook_and_keeps_the_run_history() -> None:
    store = MemoryStore(now=ticking())
    record_runs(store)
    stored_run(store)
    outlook = Outlook.model_validate(store.artifacts.get(THIRD, "OUTLOOK"))
    (gang,) = outlook.estimates
    # a's gang of 16 needs its quota (8) and 8 more: it may borrow 4, so it waits, in a dry run, for nothing that
    # changes the quotas: no estimate, and the reason
    assert (gang.name, gang.team, gang.start) == ("pretrain", "a", None)
    assert gang.unknown is not None
    assert store.durations.history(CLUSTER).running.keys() == {f"a/a-0@{P5}", f"b/b-0@{P5}"}
    a, b = outlook.standing["a"].pools[0], outlook.standing["b"].pools[0]
    assert (a.received_hours, a.entitled_hours, b.received_hours, b.entitled_hours) == (100.0, 100.0, 300.0, 300.0)


def test_why_shows_the_estimate_and_the_standing_in_text_json_and_slack() -> None:
    store = MemoryStore(now=ticking())
    record_runs(store)
    stored_run(store)
    answer = why(store, CLUSTER, "a")
    assert answer.execution == THIRD
    lines = answer.lines()
    assert "  over the last 168 h:" in lines
    assert f"    {P5}: received 100 of the 100 accelerator-hours it was entitled to (100%)" in lines
    rests_on = ("the estimates: durations from the 20 most recent runs seen to finish (2 teams); the forecast "
                "assumes no new work arrives")
    assert lines[-1] == rests_on
    assert lines[-2].startswith("  no estimated start: ")
    doc = answer.model_dump(mode="json")
    assert doc["standing"]["pools"][0] == {"pool": P5, "received_hours": 100.0, "entitled_hours": 100.0,
                                         "uncounted": None}
    assert doc["waiting"][0]["eta"]["unknown"] == lines[-2].removeprefix("  no estimated start: ")
    blocks = message(answer)["blocks"]
    texts = [b.get("text", {}).get("text", "") for b in blocks]
    assert any(t.startswith("*Standing over the last 168 h*") for t in texts)
    assert any("_When:_ no estimated start: " in t for t in texts)
    assert rests_on.removeprefix("the estimates: ") in blocks[-1]["elements"][0]["text"]


def test_with_the_plan_applied_the_gang_has_an_estimate_and_its_range() -> None:
    store = MemoryStore(now=ticking())
    record_runs(store)
    snap = waiting_snapshot().model_copy(update={"running_workloads": (
        RunningWorkload(name="b-0", team="b", pool=P5, accelerators=20, pods=3, started=T0 - timedelta(hours=2)),
        RunningWorkload(name="a-0", team="a", pool=P5, accelerators=8, pods=1, started=T0 - timedelta(hours=1)))})
    store.durations.record(CLUSTER, RunHistory(finished={"a": (3600.0,) * 10, "b": (3 * 3600.0,) * 10}))
    pol = policy({"a": {"guarantee": {P5: 24}}, "b": {}}, approval={"moved_accelerators": 1000,
                                                                    "max_decrease_percent": 100})
    planned = run_plan.make_run_plan(snap, pol, T0, store=store)
    assert planned.decision == "notice"  # it takes back what b borrows: b is told first (no wait by default)
    from rebalancer.app.workflow.outlook import record_outlook

    (gang,) = record_outlook(store, run(THIRD), snap, pol, planned).estimates
    # a's quota of 24 applies 2 min on, and with it a takes back what b borrows above its new 8 (b's one run)
    # every draw agrees; the range still stretches the 2 minutes by 1/2 and 2, as no track record is kept yet
    assert (gang.start, gang.earliest, gang.latest) == (T0 + timedelta(minutes=2), T0 + timedelta(minutes=1),
                                                       T0 + timedelta(minutes=4))


def test_a_run_stored_without_an_outlook_is_answered_as_before() -> None:
    store = MemoryStore(now=ticking())
    record_runs(store)
    answer = why(store, CLUSTER, "a")
    assert answer.execution == SECOND
    assert answer.standing is None
    assert answer.waiting[0].eta is None
    assert not any("estimated" in line or "over the last" in line for line in answer.lines())


def test_past_its_deadline_the_plan_step_stores_the_plan_and_an_outlook_that_says_so() -> None:
    store = MemoryStore(now=ticking())
    record_runs(store)
    snap = waiting_snapshot().model_copy(update={"running_workloads": (
        RunningWorkload(name="b-0", team="b", pool=P5, accelerators=20, pods=3, started=T0 - timedelta(hours=2)),)})
    state.record_snapshot(store.artifacts, run(THIRD), snap)
    store.durations.record(CLUSTER, RunHistory(finished={"a": (3600.0,) * 10, "b": (3 * 3600.0,) * 10}))
    passed = Deadline(0.0, clock=lambda: 1.0)
    result = plan(run(THIRD), store=store, load_policy=lambda _: POLICY, now=T0, outlook_deadline=passed)
    assert result["decision"] == "apply"
    assert state.load_plan(store.artifacts, run(THIRD)).changes
    outlook = Outlook.model_validate(store.artifacts.get(THIRD, "OUTLOOK"))
    (gang,) = outlook.estimates
    assert (gang.start, gang.unknown) == (None, eta.UNKNOWN["out_of_time"])
    assert any("time ran out" in note for note in outlook.notes)
    said = why(store, CLUSTER, "a").lines()
    assert any(line.startswith("the estimates: the plan step's time ran out") for line in said)
    in_time = MemoryStore(now=ticking())
    record_runs(in_time)
    state.record_snapshot(in_time.artifacts, run(THIRD), snap)
    in_time.durations.record(CLUSTER, RunHistory(finished={"a": (3600.0,) * 10, "b": (3 * 3600.0,) * 10}))
    plan(run(THIRD), store=in_time, load_policy=lambda _: POLICY, now=T0, outlook_deadline=Deadline(2.0, lambda: 1.0))
    (estimated,) = Outlook.model_validate(in_time.artifacts.get(THIRD, "OUTLOOK")).estimates
    assert estimated.start is not None


def test_why_says_how_the_estimates_here_have_turned_out() -> None:
    store = MemoryStore(now=ticking())
    record_runs(store)
    stored_run(store)
    assert not any(line.startswith("estimates here lately") for line in why(store, CLUSTER, "a").lines())
    assert store.durations.history(CLUSTER).told.keys() == {f"a/pretrain@{P5}"}  # what the gang was told, kept
    measured = MemoryStore(now=ticking())
    record_runs(measured)
    stored_run(measured, outcomes=(Outcome(waited_s=7200.0, estimated_s=5400.0), Outcome(waited_s=7200.0),
                                   Outcome(waited_s=7200.0, estimated_s=600.0), Outcome(waited_s=3600.0,
                                                                                        estimated_s=7200.0)))
    answer = why(measured, CLUSTER, "a")
    said = ("estimates here lately: 50 % of the last 4 workloads that waited an hour or more started within 2× of "
            "the wait first estimated")
    assert said in answer.lines()
    assert answer.model_dump(mode="json")["track_record"] == {"workloads": 4, "within_2x": 0.5}
    context = message(answer)["blocks"][-1]["elements"][0]["text"]
    assert said in context


def test_a_workload_that_declares_its_run_time_is_forecast_to_run_that_long_and_the_notes_say_so() -> None:
    """a's 8-GPU job waits behind its own 8-GPU run (quota 8, b using the rest): it starts when that run ends. The
    run has gone 1 h, as long as any of a's runs lasted; it declares 10 h."""
    snap = waiting_snapshot()
    queued = PendingWorkload(name="eval", team="a", pool=P5, accelerators=8, pods=1, created=T0 - timedelta(hours=1))
    runs = RunningWorkload(name="a-0", team="a", pool=P5, accelerators=8, pods=1, started=T0 - timedelta(hours=1))
    b = RunningWorkload(name="b-0", team="b", pool=P5, accelerators=24, pods=3, started=T0 - timedelta(hours=2))
    history = RunHistory(finished={"a": (3600.0,) * 10, "b": (3 * 3600.0,) * 10})
    pol = POLICY.model_copy(update={"mode": "dry-run"})

    def eval_after(declared: float | None) -> Outlook:
        running = (runs.model_copy(update={"declared_s": declared}), b)
        s = snap.model_copy(update={"pending_workloads": (queued,), "running_workloads": running})
        return outlook_of(s, pol, None, history, {})

    [drawn] = eval_after(None).estimates
    [told] = (said := eval_after(10 * 3600.0)).estimates
    # drawn, the run ends when a draw says (Lindy's rule past a's runs): a range; declared, 9 h on in every draw
    assert drawn.earliest is not None
    assert drawn.latest is not None
    assert drawn.earliest < drawn.latest
    assert (told.start, told.earliest, told.latest) == (T0 + timedelta(hours=9), T0 + timedelta(hours=4.5),
                                                       T0 + timedelta(hours=18))
    assert said.notes[0] == ("durations from the 20 most recent runs seen to finish (2 teams) and what 1 of the 3 "
                             "workloads listed declare (kueue.x-k8s.io/estimated-duration); the forecast assumes no "
                             "new work arrives")
    # a's runs have run half what they declared: its 10 h is read as 5 h, and the note says so
    history = history.model_copy(update={"declared": {"a": (0.5,) * 5}})
    [halved] = (said := eval_after(10 * 3600.0)).estimates
    assert halved.start == T0 + timedelta(hours=4)
    assert ("declare (kueue.x-k8s.io/estimated-duration), read as 1 team's declarations have turned out;"
            in said.notes[0])


def test_a_team_with_no_runs_of_its_own_is_told_its_estimates_borrow_the_cluster_s_and_no_other_team_is() -> None:
    """b has work running and waiting but no run of its own seen to finish: the outlook says so of b, why tells b
    (the text says the range too) and not a."""
    from rebalancer.planning.why import explain

    snap = waiting_snapshot()
    queued = PendingWorkload(name="eval", team="b", pool=P5, accelerators=8, pods=1, created=T0 - timedelta(hours=1))
    mine = PendingWorkload(name="mine", team="a", pool=P5, accelerators=8, pods=1, created=T0 - timedelta(hours=1))
    s = snap.model_copy(update={"pending_workloads": (queued, mine)})
    said = outlook_of(s, POLICY.model_copy(update={"mode": "dry-run"}), None,
                      RunHistory(finished={"a": (3600.0,) * 10, "b": (3600.0,) * 2}), {})
    assert [n for n in said.notes if n.startswith(("a: ", "b: "))] == [
        "b: no history of its own to estimate from (fewer than 5 of its runs seen to finish): its run times are "
        "drawn from the whole cluster's"]
    told_b = explain(s, None, "b", outlook=said)
    assert any(n.startswith("b: no history of its own") for n in told_b.estimates_rest_on)
    assert any("(likely " in line for line in told_b.lines())
    assert not any(n.startswith("b: ") for n in explain(s, None, "a", outlook=said).estimates_rest_on)
