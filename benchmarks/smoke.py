"""What the benchmarks' `--smoke` runs share: a simulator scenario small enough to run in a second (three synthetic
teams on two p5 nodes for a day), so that the test suite can run every benchmark once and a bench that no longer
runs fails CI. Its figures mean nothing."""

from __future__ import annotations

from rebalancer_tools.simulator import Scenario, default_teams, synthetic

SMOKE_HELP = "once, at a small size (the test suite runs every benchmark so; the figures mean nothing)"


def tiny_scenario() -> Scenario:
    jobs = synthetic.generate(synthetic.default_teams(3, 16, 1.2), days=1, seed=7)
    return Scenario(jobs=jobs, teams=default_teams(jobs, 16, 8), nodes=2)
