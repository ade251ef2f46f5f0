"""The run's outlook, what the plan step stores beside its plan for the teams' `why`: each pending workload's
estimated start (rebalancer.planning.eta: a forecast under the policy, with durations from the run history this
step keeps), how such estimates turned out lately (the track record, from the same history) and each team's
standing over the fair-share window (rebalancer.planning.standing, from the metered use). Computed here, once per
run, so that `/rebalancer why` reads it within Slack's three seconds."""

from __future__ import annotations

from typing import Protocol

from rebalancer.app import budgets
from rebalancer.app.workflow.run_plan import RunPlan
from rebalancer.app.workflow.state import Artifacts, RunRef
from rebalancer.domain.outlook import Outlook, RunHistory
from rebalancer.domain.policy import Policy
from rebalancer.domain.snapshot import ESTIMATED_DURATION, Snapshot
from rebalancer.errors import RebalancerError, RecordUnreadable
from rebalancer.forecast.deadline import Deadline
from rebalancer.forecast.durations import MIN_SAMPLES
from rebalancer.planning import eta, standing


class RunHistories(Protocol):
    """rebalancer.adapters.dynamodb.durations.TableDurations; rebalancer_tools.fakes.memory_store.MemoryDurations."""

    def history(self, cluster_name: str) -> RunHistory: ...
    def record(self, cluster_name: str, history: RunHistory) -> None: ...


class HistoryAndMeter(Protocol):
    """The run histories the durations come from, the metered use, and the run documents the outlook is stored
    in."""

    @property
    def artifacts(self) -> Artifacts: ...
    @property
    def meter(self) -> budgets.MeterRecords: ...
    @property
    def durations(self) -> RunHistories: ...


def outlook_of(snapshot: Snapshot, policy: Policy | None, planned: RunPlan | None, history: RunHistory,
               received: dict[str, dict[str, float]], *, replans: int = eta.REPLANS,
               deadline: Deadline | None = None) -> Outlook:
    """The outlook of a snapshot already folded into `history` (eta.history_after); `planned`: its plan (None:
    not planned), applied in the forecast when the run applies it by itself. Without a policy (a snapshot looked
    at without one) no team has a share: no standings, and the quotas stay as they are in the forecast.
    `deadline`: when the forecasts must stop, so that the run's own steps keep their time."""
    context = planned.context if planned is not None else None
    estimates = eta.estimates(snapshot, policy, planned.plan if planned else None,
                              applies=planned is not None and planned.decision in ("apply", "notice"), context=context,
                              history=history, replans=replans if planned is not None else 0, deadline=deadline)
    notes: tuple[str, ...] = (f"{_durations_from(snapshot, history)}the forecast assumes no new work arrives",
                              ) if estimates else ()
    if estimates and history.finished:  # with no run seen anywhere, each estimate says so itself (no_history)
        notes += tuple(f"{team}: {NO_HISTORY_OF_ITS_OWN}" for team in _without_history(snapshot, history))
    if deadline is not None and deadline.reached:
        notes += ("the plan step's time ran out before the forecasts ended: the estimates rest on fewer of them, "
                  "and a workload the first had not started by then has none",)
    standings = (standing.standings(snapshot, policy, received, context.budget_usage if context is not None else {})
                 if policy is not None else {})
    return Outlook(taken_at=snapshot.taken_at, estimates=estimates, standing=standings, notes=notes,
                   track_record=eta.track_record(history))


NO_HISTORY_OF_ITS_OWN = (f"no history of its own to estimate from (fewer than {MIN_SAMPLES} of its runs seen to "
                         "finish): its run times are drawn from the whole cluster's")


def _without_history(snapshot: Snapshot, history: RunHistory) -> list[str]:
    """The teams with work waiting or running whose own finished runs are too few to draw its run times from."""
    teams = {w.team for w in snapshot.pending_workloads} | {w.team for w in snapshot.running_workloads}
    return sorted(t for t in teams if len(history.finished.get(t, ())) < MIN_SAMPLES)


def _durations_from(snapshot: Snapshot, history: RunHistory) -> str:
    finished = sum(len(d) for d in history.finished.values())
    listed = len(snapshot.pending_workloads) + len(snapshot.running_workloads)
    declared = (sum(w.declared_s is not None for w in snapshot.pending_workloads)
                + sum(w.declared_s is not None for w in snapshot.running_workloads))
    parts = ([f"the {finished:,} most recent runs seen to finish ({len(history.finished)} teams)"] if finished else [])
    if declared:
        scaled = sum(len(r) >= MIN_SAMPLES for r in history.declared.values())
        whose = "team's" if scaled == 1 else "teams'"
        read_as = f", read as {scaled} {whose} declarations have turned out" if scaled else ""
        parts.append(f"what {declared:,} of the {listed:,} workloads listed declare ({ESTIMATED_DURATION}){read_as}")
    return f"durations from {' and '.join(parts)}; " if parts else ""


def record_outlook(store: HistoryAndMeter, run: RunRef, snapshot: Snapshot, policy: Policy,
                   planned: RunPlan, deadline: Deadline | None = None) -> Outlook:
    """The run history moved on to `snapshot`, the outlook stored as the run's OUTLOOK, the history kept for the
    next run with what the outlook first told the workloads it estimated. A history the store does not take fails
    nothing: the outlook is marked degraded and its notes say why; nor does one it cannot read: the estimates start
    from no history, and the unreadable one (RecordUnreadable) is replaced, one not read for now (throttled) kept."""
    cluster = run.cluster_name
    stored, unread = _read_history(store.durations, cluster)
    history = eta.history_after(stored, snapshot)
    received = (dict(planned.context.trailing_usage) if policy.fairness.window_hours is not None
                else budgets.received(store.meter, cluster, standing.window_hours(policy), snapshot.taken_at))
    outlook = outlook_of(snapshot, policy, planned, history, {t: dict(h) for t, h in received.items()},
                         deadline=deadline)
    said = _keep_history(store.durations, cluster, eta.told_after(history, outlook.estimates, snapshot), unread)
    if said:
        outlook = outlook.model_copy(update={"degraded": "; ".join(said), "notes": (*outlook.notes, *said)})
    store.artifacts.put(run.execution_name, "OUTLOOK", outlook.model_dump(mode="json"))
    return outlook


def _read_history(durations: RunHistories, cluster: str) -> tuple[RunHistory, RebalancerError | None]:
    try:
        return durations.history(cluster), None
    except RebalancerError as e:
        return RunHistory(), e


def _keep_history(durations: RunHistories, cluster: str, history: RunHistory,
                  unread: RebalancerError | None) -> list[str]:
    """The history stored for the next run, unless the stored one could not be read for now (throttled: it is kept
    as it is; one this version cannot read is replaced); what degrades the estimates, said."""
    said = []
    if unread is not None:
        said.append(f"the run history could not be read ({unread}): these estimates start from no runs seen before")
        if not isinstance(unread, RecordUnreadable):
            return said
    try:
        durations.record(cluster, history)
    except RebalancerError as e:  # the plan is stored already: a history not kept costs the next estimates only
        said.append(history_not_kept(e))
    return said


def history_not_kept(error: RebalancerError) -> str:
    return (f"the run history could not be stored ({error}): the next run estimates from the one before, and the "
            "workloads that finish meanwhile are not measured")
