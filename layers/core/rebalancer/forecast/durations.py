"""How long workloads run, estimated only from what the controller knows: each team's recent run durations seen
to finish (`History`), for a running workload the time it has run already, and what a workload declares. One
forecast draws each duration:

- A running workload that has run e: one of the team's runs that lasted longer than e, less e (the remaining time
  of one like it). Where fewer than MIN_SAMPLES ran longer (it outlived what the history holds), Lindy's rule: a
  workload that has run e is as likely to run another e as not (a Pareto tail of index 1, P(remaining > r) =
  e / (e + r)), drawn as e · u / (1 − u) for u uniform.
- A waiting workload: one of the team's runs.
A team with fewer than MIN_SAMPLES runs borrows the whole cluster's. A workload that declares its run time
(`declared`) runs that long, not a draw, read as its team's declarations have turned out (times the median of what
its runs ran over what they declared: a team that declares twice what it runs is read at half); one running past
that is drawn as above. None runs past its `limit`, where Kueue would stop it. What bounds the estimates is mostly
what the history cannot tell, a workload's own run time (docs/simulation.md, "What bounds each scenario"); a
declaration tells it.

Several forecasts with different draws give the distribution of each start (rebalancer.forecast.estimate): its
median is the estimate. Drawing, rather than giving every workload the median (or the mean) duration, is what makes
the start right both when one run is ahead of a workload (the median run) and when hundreds are (their sum, near the
mean times their number): measured, medians came out too early under sustained overload and means too late where
little waits (docs/simulation.md). Pure: the draws come from a generator seeded by the caller."""

from __future__ import annotations

import bisect
import random
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from rebalancer.forecast.model import Running, Waiting

MIN_SAMPLES = 5  # below this a sample's quartiles are its extremes
KEPT = 50  # durations kept per team: recent enough to follow a team's change of work, quartiles within ~7 points


@dataclass(frozen=True, slots=True)
class History:
    """Per team, the run durations (seconds) of its workloads that finished, oldest first, at most KEPT; and
    `declared`: of those that declared a run time, what they ran over what they declared (1: as declared)."""

    by_team: Mapping[str, tuple[float, ...]] = field(default_factory=dict)
    declared: Mapping[str, tuple[float, ...]] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return any(self.by_team.values())

    def with_finished(self, finished: Mapping[str, Sequence[float]]) -> History:
        """This history with more durations, in the order they finished; each team keeps its newest KEPT."""
        out = dict(self.by_team)
        for team, runs in finished.items():
            if runs:
                out[team] = (*out.get(team, ()), *runs)[-KEPT:]
        return History(out, self.declared)


class Drawn:
    """The `Durations` of one forecast: every duration drawn from the history by `rng`, in the order the forecast
    asks (the same seed, the same draws)."""

    def __init__(self, history: History, rng: random.Random) -> None:
        self.rng = rng
        self.teams = {t: sorted(d) for t, d in history.by_team.items() if d}
        self.everyone = sorted(d for runs in history.by_team.values() for d in runs)
        self.scale = {t: statistics.median(r) for t, r in history.declared.items() if len(r) >= MIN_SAMPLES}

    def _sample(self, team: str) -> list[float]:
        mine = self.teams.get(team, [])
        return mine if len(mine) >= MIN_SAMPLES else self.everyone

    def remaining(self, job: Running, at: float) -> float:
        elapsed = max(0.0, at - job.started)
        left = self._remaining(job, elapsed)
        return left if job.limit is None else min(left, max(0.0, job.limit - elapsed))

    def declared(self, job: Running | Waiting) -> float | None:
        """What the workload declares, read as its team's declarations have turned out: times the median of what
        its team's runs ran over what they declared, once MIN_SAMPLES are known."""
        return None if job.declared is None else job.declared * self.scale.get(job.team, 1.0)

    def _remaining(self, job: Running, elapsed: float) -> float:
        declared = self.declared(job)
        if declared is not None and declared > elapsed:
            return declared - elapsed
        sample = self._sample(job.team)
        longer = sample[bisect.bisect_right(sample, elapsed):]
        if len(longer) >= MIN_SAMPLES or (longer and elapsed == 0):
            return self.rng.choice(longer) - elapsed
        if elapsed > 0:
            u = self.rng.random()
            return elapsed * u / (1 - u)
        return self.duration(Waiting(job.job, job.team, job.accelerators, job.started, job.priority))

    def duration(self, job: Waiting) -> float:
        """inf when nothing has finished anywhere and the workload declares nothing: nothing to draw from."""
        run = self.declared(job)
        if run is None:
            sample = self._sample(job.team)
            run = self.rng.choice(sample) if sample else float("inf")
        return run if job.limit is None else min(run, job.limit)
