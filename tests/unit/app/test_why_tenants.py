"""Two teams may each queue a workload of one name (Kueue's names are unique only within a namespace): through the
plan step and `why`, each team is told its own workload's estimate, and what another team names its workloads never
changes a team's answer."""

from __future__ import annotations

from datetime import timedelta

from support.clock import ticking
from support.clusters import T0, policy, snapshot
from support.why_runs import CLUSTER, P5, record_runs, run

from rebalancer.app.why import why
from rebalancer.app.workflow import state
from rebalancer.app.workflow.steps.plan import plan
from rebalancer.domain.outlook import RunHistory
from rebalancer.domain.snapshot import PendingWorkload, RunningWorkload
from rebalancer_tools.fakes.memory_store import MemoryStore

H = timedelta(hours=1)
THIRD = "test-0003"


def answers(b_names: str) -> MemoryStore:
    """16 GPUs, a and b 8 each; b runs 8 since an hour ago (runs last two hours); each queues a workload of 8,
    a's named `train`, b's `b_names`: a's starts now in its own quota, b's when b's run ends."""
    store = MemoryStore(now=ticking())
    record_runs(store)
    snap = snapshot({P5: 2}, quotas={"a": {P5: 8}, "b": {P5: 8}}, in_use={"b": {P5: 8}},
                    pending={"a": {P5: 8}, "b": {P5: 8}}).model_copy(update={
        "running_workloads": (RunningWorkload(name=b_names, team="b", pool=P5, accelerators=8, pods=1,
                                              started=T0 - H),),
        "pending_workloads": (
            PendingWorkload(name="train", team="a", pool=P5, accelerators=8, pods=1, created=T0 - H),
            PendingWorkload(name=b_names, team="b", pool=P5, accelerators=8, pods=1, created=T0 - H))})
    state.record_snapshot(store.artifacts, run(THIRD), snap)
    store.durations.record(CLUSTER, RunHistory(finished={"a": (7200.0,) * 10, "b": (7200.0,) * 10}))
    pol = policy({"a": {}, "b": {}}).model_copy(update={"mode": "dry-run"})
    plan(run(THIRD), store=store, load_policy=lambda _: pol, now=T0)
    return store


def test_two_teams_asking_about_workloads_of_one_name_are_each_told_their_own() -> None:
    store = answers("train")
    (a,) = why(store, CLUSTER, "a").waiting
    (b,) = why(store, CLUSTER, "b").waiting
    assert (a.name, a.eta and a.eta.start) == ("train", T0)
    assert (b.name, b.eta and b.eta.start) == ("train", T0 + H)


def test_what_another_team_names_its_workloads_never_changes_a_teams_answer() -> None:
    assert why(answers("train"), CLUSTER, "a").lines() == why(answers("b-own"), CLUSTER, "a").lines()
