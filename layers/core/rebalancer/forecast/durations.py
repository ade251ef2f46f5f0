"""How long workloads run, estimated only from what the controller has seen finish: each team's recent run
durations (`History`), and for a running workload the time it has run already.

- A running workload that has run e: the durations of the team's that ran longer than e, less e (the remaining time
  of those like it); its quantile q. Where fewer than MIN_SAMPLES ran longer (it outlived what the history holds),
  Lindy's rule: a workload that has run e is as likely to run another e as not (a Pareto tail of index 1, for
  which P(remaining > r) = e / (e + r)), so its q-quantile is e · q / (1 − q).
- A waiting workload: the q-quantile of the team's durations.
The point estimate takes the medians (q = POINT): what is asked of it is to be within a factor of the actual wait,
a test on the ratio, whose best single guess for a skewed quantity is its median, not its mean (the mean of
run durations is carried by a few very long runs; measured against it, the estimates came out too late more often
than too early: docs/simulation.md). A team with fewer than MIN_SAMPLES durations borrows the whole cluster's.
Pure."""

from __future__ import annotations

import bisect
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from rebalancer.forecast.model import Running, Waiting

MIN_SAMPLES = 5  # below this a sample's quartiles are its extremes
KEPT = 50  # durations kept per team: recent enough to follow a team's change of work, quartiles within ~7 points
POINT = 0.5


def quantile(sorted_values: Sequence[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default); `sorted_values` not empty."""
    k = (len(sorted_values) - 1) * q
    lo = int(k)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (k - lo)


@dataclass(frozen=True, slots=True)
class History:
    """Per team, the run durations (seconds) of its workloads that finished, oldest first, at most KEPT."""

    by_team: Mapping[str, tuple[float, ...]] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return any(self.by_team.values())

    def with_finished(self, finished: Mapping[str, Sequence[float]]) -> History:
        """This history with more durations, in the order they finished; each team keeps its newest KEPT."""
        out = dict(self.by_team)
        for team, runs in finished.items():
            if runs:
                out[team] = (*out.get(team, ()), *runs)[-KEPT:]
        return History(out)


class FromHistory:
    """The `Durations` of a forecast at quantile `q`."""

    def __init__(self, history: History, q: float = POINT) -> None:
        self.q = q
        self.teams = {t: sorted(d) for t, d in history.by_team.items() if d}
        self.everyone = sorted(d for runs in history.by_team.values() for d in runs)
        self._waiting: dict[str, float] = {}

    def _sample(self, team: str) -> list[float]:
        mine = self.teams.get(team, [])
        return mine if len(mine) >= MIN_SAMPLES else self.everyone

    def remaining(self, job: Running, at: float) -> float:
        elapsed = max(0.0, at - job.started)
        sample = self._sample(job.team)
        longer = sample[bisect.bisect_right(sample, elapsed):]
        if len(longer) >= MIN_SAMPLES or (longer and elapsed == 0):
            return quantile(longer, self.q) - elapsed
        if elapsed > 0:
            return elapsed * self.q / (1 - self.q)
        return self.duration(Waiting(job.job, job.team, job.accelerators, job.started, job.priority))

    def duration(self, job: Waiting) -> float:
        """inf when nothing has finished anywhere: nothing to estimate from."""
        known = self._waiting.get(job.team)
        if known is None:
            sample = self._sample(job.team)
            known = quantile(sample, self.q) if sample else float("inf")
            self._waiting[job.team] = known
        return known
