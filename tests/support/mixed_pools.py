"""A generated four-day trace on a cluster of two pools (eight ml.p5.48xlarge, two ml.trn1.32xlarge nodes), some
teams on each, 1.2 × the capacity of demand: the scenario of the multi-pool simulator tests."""

from __future__ import annotations

import dataclasses

from rebalancer_tools.simulator.engine import Failures
from rebalancer_tools.simulator.run import Scenario
from rebalancer_tools.simulator.synthetic import generate, pool_teams
from rebalancer_tools.simulator.teams import default_pool_teams

P5, TRN1 = "ml.p5.48xlarge", "ml.trn1.32xlarge"


def mixed(seed: int = 1, mtbf: float | None = None) -> Scenario:
    loads = pool_teams(4, [(P5, 64), (TRN1, 32)], 1.2)
    jobs = generate(loads, days=4, seed=seed)
    sc = Scenario(jobs=jobs, teams=(), pools=((P5, 8), (TRN1, 2)), failures=Failures(mtbf_hours=mtbf), seed=seed,
                  controller_interval_s=3600)
    return dataclasses.replace(sc, teams=default_pool_teams(sc.jobs_by_pool()))
