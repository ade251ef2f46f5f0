"""The synthetic trace generator meets each kind's average load over a long trace (120 days: tens of thousands of
jobs for the diurnal kind); the trace's shape per kind is in tests/unit/simulator/test_synthetic_trace.py."""

from __future__ import annotations

import pytest

from rebalancer_tools.simulator.synthetic import DAY, TeamLoad, generate


def busy_gpus(jobs: list, days: float) -> float:  # type: ignore[type-arg]
    return sum(j.gpus * j.duration_s for j in jobs) / (days * DAY)


@pytest.mark.parametrize("kind", ["steady", "diurnal", "bursty", "heavy_tailed"])
def test_each_kind_meets_its_average_load(kind: str) -> None:
    days = 120.0
    jobs = generate([TeamLoad("t", kind, 64)], days=days, seed=1)  # type: ignore[arg-type]
    assert busy_gpus(jobs, days) == pytest.approx(64, rel=0.25)
