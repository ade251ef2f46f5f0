"""Each waiting workload's estimated start and its range, from three forecasts of the cluster as it is
(rebalancer.forecast.engine) that differ only in the durations they assume (rebalancer.forecast.durations): the
point at their medians, the range at their lower and upper quartiles. A
workload the point forecast does not start has no estimate, and says why. The controller plans in the point
forecast only; the range's forecasts replay its plans."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Literal

from rebalancer.forecast.durations import POINT, FromHistory, History
from rebalancer.forecast.engine import DAY_S, WORK, Controller, forecast
from rebalancer.forecast.model import Cluster, NoStart

EARLY, LATE = 0.25, 0.75
HORIZON_S = 90 * DAY_S  # a quarter: longer than any wait the bench scenarios' rebalancer gives a job at p95
Unknown = NoStart | Literal["no_history"]


@dataclass(frozen=True, slots=True)
class Estimate:
    """Seconds on the cluster's clock: `start` the point estimate, `earliest` and `latest` its range (`latest`
    None: not within the horizon at the upper quartiles); or `start` None and `unknown` saying why."""

    start: float | None
    earliest: float | None = None
    latest: float | None = None
    unknown: Unknown | None = None


def estimate(cluster: Cluster, history: History, *, targets: Collection[str] | None = None,
             controller: Controller | None = None, horizon_s: float = HORIZON_S,
             ranged: bool = True, work: int = WORK) -> dict[str, Estimate]:
    """The estimate of each waiting workload of `targets` (default all); `ranged` False: the point alone (what
    the simulator measures), one forecast instead of three. `work`: the point forecast's bound; each of the
    range's gets half of it (a range cut short says "later than the forecast reaches" at its end)."""
    planned = forecast(cluster, FromHistory(history, POINT), targets=targets, controller=controller,
                       horizon_s=horizon_s, work=work)
    point = early = late = planned.starts
    if ranged:
        # the range replays the point forecast's plans: the controller's decisions, not its planner again
        replay = controller.replaying(planned.plans) if controller is not None else None
        early = forecast(cluster, FromHistory(history, EARLY), targets=targets, controller=replay,
                         horizon_s=horizon_s, work=work // 2).starts
        late = forecast(cluster, FromHistory(history, LATE), targets=targets, controller=replay,
                        horizon_s=horizon_s, work=work // 2).starts
    out: dict[str, Estimate] = {}
    for job, p in point.items():
        if p.at is None:
            unknown: Unknown | None = p.reason if history or p.reason == "larger_than_pool" else "no_history"
            out[job] = Estimate(None, unknown=unknown)
            continue
        lo, hi = early[job].at, late[job].at
        out[job] = Estimate(p.at, min(p.at, lo) if lo is not None else p.at, None if hi is None else max(p.at, hi))
    return out
