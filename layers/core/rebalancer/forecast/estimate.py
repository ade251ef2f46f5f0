"""Each waiting workload's estimated start and its range, from DRAWS forecasts of the cluster as it is
(rebalancer.forecast.engine) that differ only in the durations they draw (rebalancer.forecast.durations): the
estimate is the median of the starts they give, the range the earliest and the latest of them (every start a
draw gave is in it: the quartiles of five draws are the 2nd and 4th, a band that leaves two of the five outside;
rebalancer.planning.eta widens the span further by how the estimates have turned out). A workload the median
forecast does not start has no estimate, and says why. The controller plans in the first forecast only; the others
replay its plans. Past a `Deadline` no further forecast is made: the estimate is the median of those that ended
(the first always counts), and a workload the first did not start by then has none ("out_of_time")."""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Literal

from rebalancer.forecast.deadline import Deadline
from rebalancer.forecast.durations import Drawn, History
from rebalancer.forecast.engine import DAY_S, WORK, Controller, Durations, forecast
from rebalancer.forecast.model import Cluster, NoStart

# Five draws: a median that is a draw itself (the 3rd of five) and the span of five, at five forecasts' cost; the
# simulator measured the estimate with them (docs/simulation.md).
DRAWS = 5
HORIZON_S = 90 * DAY_S  # a quarter: longer than any wait the bench scenarios' rebalancer gives a job at p95
Unknown = NoStart | Literal["no_history"]
# How a forecast's durations are drawn from the history with its generator: rebalancer.forecast.durations.Drawn.
DrawFrom = Callable[[History, random.Random], Durations]


@dataclass(frozen=True, slots=True)
class Estimate:
    """Seconds on the cluster's clock: `start` the point estimate, `earliest` and `latest` the span of the draws
    (`latest` None: one draw did not start it within the horizon); or `start` None and `unknown` saying why."""

    start: float | None
    earliest: float | None = None
    latest: float | None = None
    unknown: Unknown | None = None


def estimate(cluster: Cluster, history: History, *, targets: Collection[str] | None = None,
             controller: Controller | None = None, horizon_s: float = HORIZON_S,
             work: int = 2 * WORK, deadline: Deadline | None = None,
             draw: DrawFrom = Drawn) -> dict[str, Estimate]:
    """The estimate of each waiting workload of `targets` (default all). `work`: the bound of all the forecasts
    together, a DRAWS-th each (a draw cut short counts as later than it reaches); twice one forecast's default,
    a few seconds here at 1,000 teams (benchmarks/outlook_bench.py)."""
    def drawn(d: int) -> Durations:
        return draw(history, random.Random(f"{cluster.at!r}:{d}"))

    first = forecast(cluster, drawn(0), targets=targets, controller=controller, horizon_s=horizon_s,
                     work=work // DRAWS, deadline=deadline)
    replay = controller.replaying(first.plans) if controller is not None else None
    runs = [first.starts]
    for d in range(1, DRAWS):
        if deadline is not None and deadline.passed():
            break
        later = forecast(cluster, drawn(d), targets=targets, controller=replay, horizon_s=horizon_s,
                         work=work // DRAWS, deadline=deadline)
        if deadline is None or not deadline.reached:  # one cut short would put what it did not reach at the end
            runs.append(later.starts)
    n = len(runs)
    out: dict[str, Estimate] = {}
    for job in first.starts:
        starts = [r[job] for r in runs]
        times = sorted(s.at if s.at is not None else math.inf for s in starts)
        mid, lo, hi = times[n // 2], times[0], times[-1]
        if mid == math.inf:
            reason = next(s.reason for s in starts if s.at is None)
            unknown: Unknown | None = reason if history or reason == "larger_than_pool" else "no_history"
            out[job] = Estimate(None, unknown=unknown)
        else:
            out[job] = Estimate(mid, lo, None if hi == math.inf else hi)
    return out
