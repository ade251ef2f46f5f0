"""How good `rebalancer why`'s estimated start would have been: every job is asked about at the first controller
run after it arrives (when the controller first sees it, as the plan step does), with the estimator the controller
runs (rebalancer.forecast.estimate: the median of its forecasts) on what the controller sees
(`Simulation.observed`: never a job's duration) and the run durations it saw finish; once the run is over, each
job that waited at least an hour has its estimate set against its actual first start."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rebalancer.forecast.durations import Drawn, History
from rebalancer.forecast.engine import Controller, Quotas
from rebalancer.forecast.estimate import DrawFrom, Estimate, estimate
from rebalancer.forecast.model import Cluster
from rebalancer.planning.eta import REPLANS, WAITED_S, WITHIN
from rebalancer_tools.simulator.results import RawResult


class Estimator:
    """An `EtaProbe`: the estimate of the jobs asked about; with `replan` (the strategy's controller, as the
    forecast calls it) the forecast re-plans every `interval_s`, applied `apply_delay_s` later. `draw`: how the
    durations are drawn (the controller's way unless a measurement says otherwise: benchmarks/eta_bounds.py)."""

    def __init__(self, replan: Callable[[Cluster], Quotas | None] | None = None, interval_s: float = 900.0,
                 apply_delay_s: float = 120.0, max_replans: int = REPLANS, draw: DrawFrom = Drawn) -> None:
        self.replan, self.interval_s, self.apply_delay_s = replan, interval_s, apply_delay_s
        self.max_replans, self.draw = max_replans, draw

    def __call__(self, cluster: Cluster, history: History, targets: tuple[str, ...],
                 staged: tuple[float, dict[str, dict[str, int]]] | None) -> dict[str, Estimate]:
        controller = (Controller(self.replan, self.interval_s, self.apply_delay_s, self.max_replans, staged)
                      if self.replan is not None else None)
        return estimate(cluster, history, targets=targets, controller=controller, draw=self.draw)


@dataclass(frozen=True, slots=True)
class EtaAccuracy:
    """Over the jobs that waited at least WAITED_S and started: how many, the share whose estimated wait was within
    a factor WITHIN of the actual one (a job given no estimate counts as missed), the median of |estimated −
    actual start| in hours over those given one, how many were given none, and the shares of the misses on either
    side (estimated wait under 1/WITHIN of the actual one: too early; over WITHIN times it: too late); and the
    share whose actual start was in the likely range told with the estimate (planning.eta.likely_range). No job
    measured, no share: None (`null` in JSON, "n/a" in text), never a perfect score."""

    jobs: int
    within_2x: float | None
    median_abs_error_h: float | None
    without_estimate: int
    too_early: float | None = 0.0
    too_late: float | None = 0.0
    within_range: float | None = None

    def output(self) -> dict[str, Any]:
        return {"jobs": self.jobs, "within_2x": _rounded(self.within_2x, 4),
                "within_range": _rounded(self.within_range, 4),
                "median_abs_error_h": _rounded(self.median_abs_error_h, 2),
                "without_estimate": self.without_estimate, "too_early": _rounded(self.too_early, 4),
                "too_late": _rounded(self.too_late, 4)}


def _rounded(x: float | None, digits: int) -> float | None:
    return None if x is None else round(x, digits)


def share_text(x: float | None) -> str:
    """A share as the tables show it: a percentage, or "n/a" when nothing was measured."""
    return "n/a" if x is None else f"{x:.1%}"


def accuracy(raw: RawResult) -> EtaAccuracy | None:
    """None when the run asked nothing (no estimator)."""
    if not raw.job_asked:
        return None
    errors: list[float] = []
    hits = jobs = missing = early = late = ranged = 0
    likely = raw.job_likely_s or [None] * len(raw.job_estimate_s)
    for submit, start, est, span in zip(raw.job_submit_s, raw.job_first_start_s, raw.job_estimate_s, likely,
                                        strict=True):
        waited = start - submit
        if start < 0 or waited < WAITED_S:
            continue
        jobs += 1
        if est is None:
            missing += 1
            continue
        errors.append(abs(est - start) / 3600)
        ratio = (est - submit) / waited
        hits += 1 / WITHIN <= ratio <= WITHIN
        ranged += span is not None and span[0] <= start and (span[1] is None or start <= span[1])
        early += ratio < 1 / WITHIN
        late += ratio > WITHIN
    errors.sort()
    median = None
    if errors:
        mid = len(errors) // 2
        median = errors[mid] if len(errors) % 2 else (errors[mid - 1] + errors[mid]) / 2
    if not jobs:
        return EtaAccuracy(0, None, None, 0, None, None, None)
    return EtaAccuracy(jobs, hits / jobs, median, missing, early / jobs, late / jobs, ranged / jobs)
