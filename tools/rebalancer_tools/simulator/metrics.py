"""What a run is judged by: utilization, waiting, preemptions and lost work, entitlement deficit, Jain's index, and
per team over each week (received ÷ entitled), the question a team lead asks."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from rebalancer.engine.allocation import water_fill
from rebalancer_tools.simulator.eta import EtaAccuracy, accuracy
from rebalancer_tools.simulator.results import POOL_FIELDS, PoolRaw, RawResult, Timeline


def entitlements(capacity: float, weights: Sequence[float], demands: Sequence[float]) -> list[float]:
    """Each team's fair entitlement: weighted max-min division of `capacity` among the demands (the engine's own
    water-fill with no floors and the demands as ceilings). A team with no demand or weight 0 is entitled to nothing.
    A metric, not a controller."""
    ceilings = [float(d) if d > 0 and w > 0 else 0.0 for d, w in zip(demands, weights, strict=True)]
    return water_fill(capacity, weights, [0.0] * len(ceilings), ceilings)


def jain(values: Sequence[float]) -> float:
    """Jain's fairness index (Σx)² / (n·Σx²): 1 when all equal, 1/n when one takes all."""
    if not values:
        return 1.0
    sq = sum(v * v for v in values)
    return 1.0 if sq == 0 else sum(values) ** 2 / (len(values) * sq)


def percentile(sorted_values: Sequence[float], p: float) -> float:
    """Linear interpolation between closest ranks (numpy's default)."""
    if not sorted_values:
        return 0.0
    k = (len(sorted_values) - 1) * p / 100
    lo = math.floor(k)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (k - lo)


WINDOW_HOURS = 168  # one week: KAI's and Run:ai's default window for time-based fair share
WEEK_S = WINDOW_HOURS * 3600.0
MIN_WINDOW_ENTITLED_H = 1.0  # a week whose entitlement is under one accelerator-hour is noise, not a share


@dataclass(frozen=True, slots=True)
class FairnessWindows:
    """Over every team and every week with demand: received ÷ entitled accelerator-hours (the entitlement is the
    weighted max-min share of the demand, so it never exceeds what the team asked for: min(entitled, demanded))."""

    hours: int
    windows: int
    worst_ratio: float
    p10_ratio: float

    def output(self) -> dict[str, Any]:
        return {"hours": self.hours, "windows": self.windows, "worst_ratio": round(self.worst_ratio, 4),
                "p10_ratio": round(self.p10_ratio, 4)}


def weekly(raw: RawResult) -> list[list[tuple[float, float]]]:
    """Per team, per week since the start (the last one partial): (received, entitled) accelerator-hours."""
    marks = [*raw.week_marks, (raw.received_gpu_s, raw.entitled_gpu_s)]
    out: list[list[tuple[float, float]]] = []
    for i in range(len(raw.teams)):
        rows, before = [], (0.0, 0.0)
        for received, entitled in marks:
            rows.append(((received[i] - before[0]) / 3600.0, (entitled[i] - before[1]) / 3600.0))
            before = (received[i], entitled[i])
        out.append(rows)
    return out


def team_weeks(raw: RawResult) -> list[list[float | None]]:
    """Per team, per week: received ÷ entitled, or None for a week without a share worth counting."""
    return [[r / e if e >= MIN_WINDOW_ENTITLED_H else None for r, e in rows] for rows in weekly(raw)]


def fairness_windows(weeks: Sequence[Sequence[float | None]]) -> FairnessWindows:
    """Worst and 10th-percentile ratio over every (team, week) of `team_weeks`."""
    ratios = sorted(x for row in weeks for x in row if x is not None)
    if not ratios:
        return FairnessWindows(WINDOW_HOURS, 0, 1.0, 1.0)
    return FairnessWindows(WINDOW_HOURS, len(ratios), ratios[0], percentile(ratios, 10))


@dataclass(frozen=True, slots=True)
class TeamResult:
    jobs: int
    jobs_completed: int
    wait_p50_s: float
    wait_p95_s: float
    wait_mean_s: float
    preemptions: int
    lost_gpu_hours: float
    received_gpu_hours: float
    entitled_gpu_hours: float
    entitlement_deficit_gpu_hours: float
    quota_changes: int
    worst_week_ratio: float | None = None  # the team's lowest received ÷ entitled over a week with a share


@dataclass(frozen=True, slots=True)
class StrategyResult:
    name: str
    utilization: float
    wait_p50_s: float
    wait_p95_s: float
    wait_mean_s: float
    preemptions: int
    lost_gpu_hours: float
    entitlement_deficit_gpu_hours: float
    jain_index: float
    quota_changes: int
    jobs_completed: int
    jobs_unfinished: int
    failure_kills: int
    failure_lost_gpu_hours: float
    makespan_s: float
    teams: dict[str, TeamResult] = field(default_factory=dict)
    timeline: Timeline | None = None
    budgets: dict[str, dict[str, dict[str, float]]] = field(default_factory=dict)  # team → period → hours, %
    pools: dict[str, StrategyResult] = field(default_factory=dict)  # per instance type, when there are several
    fairness: FairnessWindows | None = None  # over the whole cluster only (not per pool)
    eta: EtaAccuracy | None = None  # how good the estimated starts were (over the whole cluster only)

    def output(self) -> dict[str, Any]:
        """The JSON shape of `rebalancer simulate --format json`, per strategy."""
        return {
            "utilization": round(self.utilization, 4),
            "wait_p50_s": round(self.wait_p50_s, 1),
            "wait_p95_s": round(self.wait_p95_s, 1),
            "wait_mean_s": round(self.wait_mean_s, 1),
            "preemptions": self.preemptions,
            "lost_gpu_hours": round(self.lost_gpu_hours, 1),
            "entitlement_deficit_gpu_hours": round(self.entitlement_deficit_gpu_hours, 1),
            "jain_index": round(self.jain_index, 4),
            "quota_changes": self.quota_changes,
            "jobs_completed": self.jobs_completed,
            "jobs_unfinished": self.jobs_unfinished,
            "failure_kills": self.failure_kills,
            "failure_lost_gpu_hours": round(self.failure_lost_gpu_hours, 1),
            "makespan_s": round(self.makespan_s, 1),
            "teams": {t: {k: (round(v, 2) if isinstance(v, float) else v) for k, v in _fields(r).items()}
                      for t, r in self.teams.items()},
            **({"fairness_windows": self.fairness.output()} if self.fairness else {}),
            **({"eta": self.eta.output()} if self.eta else {}),
            **({"budgets": self.budgets} if self.budgets else {}),
            **({"pools": {n: r.output() for n, r in self.pools.items()}} if self.pools else {}),
        }


def _fields(r: TeamResult) -> dict[str, Any]:
    return {k: getattr(r, k) for k in r.__slots__}


def _waits(raw: RawResult, team: int | None) -> list[float]:
    return sorted(w for w, t in zip(raw.job_wait_s, raw.job_team, strict=True) if team is None or t == team)


def pool_raw(raw: RawResult, p: int) -> RawResult:
    """The run as seen from one pool: its integrals and its jobs only."""
    pr: PoolRaw = raw.pools[p]
    mine = [i for i, jp in enumerate(raw.job_pool) if jp == p]
    return RawResult(teams=raw.teams, end_s=raw.end_s, window_s=raw.window_s,
                     **{f: getattr(pr, f) for f in POOL_FIELDS}, job_team=[raw.job_team[i] for i in mine],
                     job_wait_s=[raw.job_wait_s[i] for i in mine], job_done=[raw.job_done[i] for i in mine],
                     timeline=Timeline())


def summarize(name: str, raw: RawResult) -> StrategyResult:
    """Waits are the time each job spent queued (all its queued spells; a job never started counts until the end).
    With several pools the figures are over all of them (accelerator-hours of every kind added up; Jain's index
    over each team's received ÷ entitled summed across pools), and `pools` holds each pool's own."""
    result = _summarize(name, raw, team_weeks(raw))
    if len(raw.pools) < 2:
        return result
    pools = {pr.name: _summarize(name, pool_raw(raw, p)) for p, pr in enumerate(raw.pools)}
    return dataclasses.replace(result, pools=pools)


def _summarize(name: str, raw: RawResult, weeks: list[list[float | None]] | None = None) -> StrategyResult:
    """`weeks` (the run's, not a pool's: the week marks are over all pools) adds the per-week figures."""
    h = 3600.0
    teams: dict[str, TeamResult] = {}
    ratios = []
    for i, t in enumerate(raw.teams):
        counted = [x for x in weeks[i] if x is not None] if weeks else []
        waits = _waits(raw, i)
        done = sum(1 for d, jt in zip(raw.job_done, raw.job_team, strict=True) if d and jt == i)
        teams[t] = TeamResult(
            jobs=len(waits), jobs_completed=done, wait_p50_s=percentile(waits, 50), wait_p95_s=percentile(waits, 95),
            wait_mean_s=sum(waits) / len(waits) if waits else 0.0, preemptions=raw.preemptions[i],
            lost_gpu_hours=raw.lost_gpu_s[i] / h, received_gpu_hours=raw.received_gpu_s[i] / h,
            entitled_gpu_hours=raw.entitled_gpu_s[i] / h, entitlement_deficit_gpu_hours=raw.deficit_gpu_s[i] / h,
            quota_changes=raw.quota_changes[i], worst_week_ratio=min(counted) if counted else None)
        if raw.entitled_gpu_s[i] > 0:
            ratios.append(raw.received_gpu_s[i] / raw.entitled_gpu_s[i])
    waits = _waits(raw, None)
    completed = sum(raw.job_done)
    return StrategyResult(
        name=name,
        utilization=raw.busy_gpu_s_window / raw.capacity_gpu_s_window if raw.capacity_gpu_s_window else 0.0,
        wait_p50_s=percentile(waits, 50), wait_p95_s=percentile(waits, 95),
        wait_mean_s=sum(waits) / len(waits) if waits else 0.0,
        preemptions=sum(raw.preemptions), lost_gpu_hours=sum(raw.lost_gpu_s) / h,
        entitlement_deficit_gpu_hours=sum(raw.deficit_gpu_s) / h, jain_index=jain(ratios),
        quota_changes=sum(raw.quota_changes), jobs_completed=completed, jobs_unfinished=len(waits) - completed,
        failure_kills=sum(raw.failure_kills), failure_lost_gpu_hours=sum(raw.failure_lost_gpu_s) / h,
        makespan_s=raw.end_s, teams=teams, timeline=raw.timeline,
        fairness=fairness_windows(weeks) if weeks is not None else None,
        eta=accuracy(raw) if weeks is not None else None)
