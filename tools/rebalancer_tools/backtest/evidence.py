"""How much a backtest proves: whether the history is long enough to mean anything, and whether one policy's score
is better than another's by more than the history's own variation.

- Too thin: under MIN_HOURS of samples. Demand follows the working day; a history shorter than one day judges a
  policy on part of that cycle (the hours it happens to cover), so its figures say how the policy behaved then,
  not how it behaves. `backtest` says so beside its figures; `recommend` recommends nothing.
- Better by a margin: both policies are replayed on the same states, so their difference is paired, hour by hour
  (each hour's deficit, guaranteed-but-idle hours and reversals, weighted as the objective weighs them). A
  suggestion is recommended only when it beats the current policy by more than two standard errors of that sum
  (what the hour-to-hour variation of the difference could give by chance: a single burst avoided is one event,
  not evidence), and by at least MIN_GAIN: one accelerator-hour, the objective's unit (a deficit of one
  accelerator for an hour); less, over a whole history, is a difference no team would notice.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

from rebalancer_tools.backtest.replay import Replay, State
from rebalancer_tools.backtest.search import IDLE_WEIGHT, REVERSAL_WEIGHT

MIN_HOURS = 24.0
MIN_GAIN = 1.0
STANDARD_ERRORS = 2.0


def covered(states: list[State]) -> str:
    """`9.1 h in 10 states (2026-12-02 17:28 to 2026-12-03 02:32 UTC)`."""
    hours = sum(s.hours for s in states)
    if not states:
        return "no state"
    span = f"{states[0].at:%Y-%m-%d %H:%M} to {states[-1].at:%Y-%m-%d %H:%M} UTC"
    return f"{hours:,.1f} h in {len(states):,} state{'s' if len(states) != 1 else ''} ({span})"


def too_thin(states: list[State], what: str = "a backtest") -> str | None:
    """Why the history is too short to mean anything, or None."""
    hours = sum(s.hours for s in states)
    if hours >= MIN_HOURS:
        return None
    return (f"the history covers {covered(states)}; {what} needs at least {MIN_HOURS:g} h (one daily cycle of "
            "demand) to say how a policy behaves rather than how it behaved in those hours")


def _hour_cost(parts: list[float] | None) -> float:
    if parts is None:
        return 0.0
    deficit, idle, reversals = parts
    return deficit + IDLE_WEIGHT * idle + REVERSAL_WEIGHT * reversals


@dataclass(frozen=True, slots=True)
class Gain:
    """How much better a candidate scores than the current policy on the same history, and the margin it must
    beat."""

    gain: float  # current's objective − the candidate's: positive is better
    margin: float
    hours: int  # the paired hourly differences the margin comes from
    standard_error: float

    @property
    def enough(self) -> bool:
        return self.gain > 0 and self.gain >= self.margin

    def text(self) -> str:
        spread = STANDARD_ERRORS * self.standard_error
        why = (f"two standard errors of the {self.hours} hourly differences ({spread:,.1f}), and at least "
               f"{MIN_GAIN:g} accelerator-hour")
        if self.gain <= 0:
            return f"no better than the current policy (margin {self.margin:,.1f}: {why})"
        verdict = "more" if self.enough else "less"
        return f"better by {self.gain:,.1f}, {verdict} than the margin {self.margin:,.1f} ({why})"


def gain(current: Replay, candidate: Replay, current_score: float, candidate_score: float) -> Gain:
    """The paired comparison of two replays of the same states (see the module's docstring)."""
    hours = sorted(set(current.hourly) | set(candidate.hourly))
    diffs = [_hour_cost(current.hourly.get(h)) - _hour_cost(candidate.hourly.get(h)) for h in hours]
    se = math.sqrt(len(diffs)) * statistics.stdev(diffs) if len(diffs) > 1 else math.inf
    margin = max(STANDARD_ERRORS * se, MIN_GAIN)
    return Gain(current_score - candidate_score, margin, len(diffs), se)
