"""Kueue's workload names are unique only within a namespace: two teams may each run and queue a workload of one name.
The estimates, the run history and the declared/ran ratios know a workload by its team and name, so one team's
workloads never change what another team is told; a history stored when they were known by name alone is read
as one known by team."""

from __future__ import annotations

from datetime import timedelta

from support.clusters import T0, snapshot

from rebalancer.domain.outlook import RunHistory, Seen
from rebalancer.domain.snapshot import PendingWorkload, RunningWorkload, Snapshot
from rebalancer.planning import eta

P5 = "ml.p5.48xlarge"
H = timedelta(hours=1)
TWO_HOURS = RunHistory(finished={"a": (7200.0,) * 10, "b": (7200.0,) * 10})


def two_teams(b_names: str = "train") -> Snapshot:
    """16 GPUs, a and b 8 each: b runs 8 since an hour ago (runs last two hours); each queues a workload of 8.
    a's starts now in its own quota, b's when b's run ends. `b_names`: the name of b's workloads."""
    snap = snapshot({P5: 2}, quotas={"a": {P5: 8}, "b": {P5: 8}}, in_use={"b": {P5: 8}},
                    pending={"a": {P5: 8}, "b": {P5: 8}})
    return snap.model_copy(update={
        "running_workloads": (RunningWorkload(name=b_names, team="b", pool=P5, accelerators=8, pods=1,
                                              started=T0 - H),),
        "pending_workloads": (
            PendingWorkload(name="train", team="a", pool=P5, accelerators=8, pods=1, created=T0 - H),
            PendingWorkload(name=b_names, team="b", pool=P5, accelerators=8, pods=1, created=T0 - H))})


def test_two_teams_waiting_with_one_workload_name_get_their_own_estimates() -> None:
    a, b = eta.estimates(two_teams(), None, None, applies=False, context=None, history=TWO_HOURS)
    assert (a.team, a.name, a.start) == ("a", "train", T0)
    assert (b.team, b.name, b.start) == ("b", "train", T0 + H)


def test_another_teams_workload_names_never_change_a_teams_estimates() -> None:
    same = eta.estimates(two_teams("train"), None, None, applies=False, context=None, history=TWO_HOURS)
    other = eta.estimates(two_teams("b-own"), None, None, applies=False, context=None, history=TWO_HOURS)
    assert [(e.team, e.start, e.earliest, e.latest, e.unknown) for e in same] == \
        [(e.team, e.start, e.earliest, e.latest, e.unknown) for e in other]


def test_two_teams_runs_of_one_name_are_each_charged_to_their_team_with_their_own_ratio() -> None:
    """a's `train` declared 1 h, b's `train` 4 h; both run from T0 - 2 h and are gone at T0 + 30 min (seen last
    at T0): each ran 2 h 15 min, a 2.25 of what it declared, b 0.5625."""
    running = tuple(RunningWorkload(name="train", team=t, pool=P5, accelerators=8, pods=1, started=T0 - 2 * H,
                                    declared_s=d) for t, d in (("a", 3600.0), ("b", 4 * 3600.0)))
    first = snapshot({P5: 2}).model_copy(update={"running_workloads": running})
    h1 = eta.history_after(RunHistory(), first)
    assert {k: v.team for k, v in h1.running.items()} == {f"a/train@{P5}": "a", f"b/train@{P5}": "b"}
    gone = first.model_copy(update={"taken_at": T0 + H / 2, "running_workloads": ()})
    h2 = eta.history_after(h1, gone)
    assert h2.finished == {"a": (8100.0,), "b": (8100.0,)}
    assert h2.declared == {"a": (2.25,), "b": (0.562,)}


def test_a_history_stored_by_workload_name_alone_is_read_as_known_by_team() -> None:
    """The item the previous version wrote (`name@pool`): a running workload's entry names its team, so it keeps
    being measured; a first estimate's does not, so it is left out."""
    stored = {"running": {f"train@{P5}": {"team": "b", "started": "2026-11-30T11:00:00Z",
                                         "last_seen": "2026-11-30T12:00:00Z", "declared_s": 3600.0}},
              "finished": {"b": [60.0]}, "declared": {}, "outcomes": [],
              "told": {f"wait@{P5}": {"queued": "2026-11-30T11:00:00Z", "start": None}}}
    history = RunHistory.model_validate(stored)
    assert history.running == {f"b/train@{P5}": Seen(team="b", started=T0 - H, last_seen=T0, declared_s=3600.0)}
    assert history.told == {}
    assert history.finished == {"b": (60.0,)}
    assert RunHistory.model_validate(history.model_dump(mode="json")) == history
