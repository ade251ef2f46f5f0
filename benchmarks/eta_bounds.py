"""What bounds the estimated starts (docs/simulation.md, "What bounds each scenario"): a bench scenario's rebalancer
run, its estimates made as the controller makes them, then again told what no controller knows, the trace's true
durations: of the waiting jobs, of the running ones (their remaining time), or of both. One JSON line each, with
the `eta` figures `simulate` reports. The gap between "none" and "both" is what the run history cannot tell of
durations. What "both" still misses is what the forecast does not model: work submitted later, node failures, the
controller's plans after the first hour.

`--declare SHARE[:FACTOR[:BIAS]]` runs it again with that share of the jobs (chosen by a hash of their ids)
declaring their run time, as a workload does with Kueue's estimated-duration annotation, through the controller's
own code path; each declaration off by a factor drawn log-uniformly within FACTOR either way (1: exact), seeded by
the job's id, and BIAS times the run time (2: every job declares twice what it runs).

    PYTHONPATH=layers/core:tools .venv/bin/python benchmarks/eta_bounds.py philly-1024 [--told none both]
    PYTHONPATH=layers/core:tools .venv/bin/python benchmarks/eta_bounds.py philly-1024 --told --declare 1 0.5 1:2

Scenarios: those of `make bench-sim` (rebalancer_tools.simulator.bench.SCENARIOS). Philly 512 takes about 8 minutes
a line on the shared 2-core machine, the others 1-3 minutes.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import random
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from rebalancer.forecast.durations import Drawn, History
from rebalancer.forecast.estimate import DrawFrom
from rebalancer.forecast.model import Running, Waiting
from rebalancer_tools.simulator import Scenario, bench
from rebalancer_tools.simulator.run import simulate
from rebalancer_tools.simulator.trace import TraceJob

sys.path.insert(0, str(Path(__file__).resolve().parent))
from smoke import SMOKE_HELP, tiny_scenario

PHILLY = "../shared/traces/philly-vc/jobs.csv"
TOLD = ("none", "waiting", "running", "both")


class Told:
    """The trace's durations for the waiting jobs, the running ones, or both (the simulator names a job by its index
    in the trace); the rest drawn as the controller draws them. A preempted job restarts from the start (the bench
    scenarios checkpoint nothing), so a running job has its duration less the time since it last started."""

    def __init__(self, jobs: Sequence[TraceJob], told: str, drawn: Drawn) -> None:
        self.jobs, self.drawn = jobs, drawn
        self.waiting, self.running = told in ("waiting", "both"), told in ("running", "both")

    def remaining(self, job: Running, at: float) -> float:
        if self.running:
            return max(0.0, self.jobs[int(job.job)].duration_s - (at - job.started))
        return self.drawn.remaining(job, at)

    def duration(self, job: Waiting) -> float:
        return self.jobs[int(job.job)].duration_s if self.waiting else self.drawn.duration(job)


def drawing(jobs: Sequence[TraceJob], told: str) -> DrawFrom:
    if told == "none":
        return Drawn

    def draw(history: History, rng: random.Random) -> Told:
        return Told(jobs, told, Drawn(history, rng))

    return draw


def declaring(jobs: Sequence[TraceJob], share: float, factor: float, bias: float = 1.0) -> list[TraceJob]:
    """The jobs, `share` of them declaring `bias` times their duration, off by up to `factor` either way."""
    out = []
    for j in jobs:
        rng = random.Random(f"declare:{j.job_id}")
        declares, off = rng.random() < share, bias * factor ** rng.uniform(-1.0, 1.0)
        out.append(dataclasses.replace(j, declared_s=j.duration_s * off) if declares else j)
    return out


def measure(key: str, sc: Scenario, told: str, declare: str | None = None) -> dict[str, object]:
    t0 = time.perf_counter()
    if declare is not None:
        share, factor, bias = (*declare.split(":"), "1", "1")[:3]
        sc = dataclasses.replace(sc, jobs=declaring(sc.resolved_jobs(), float(share), float(factor), float(bias)))
    result, _ = simulate(sc, "rebalancer", draw=drawing(sc.resolved_jobs(), told))
    return {"scenario": key, "told": told, "declared": declare, "eta": result.eta.output() if result.eta else None,
            "seconds": round(time.perf_counter() - t0, 1)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("scenario", nargs="?", choices=[s.key for s in bench.SCENARIOS], default="philly-1024")
    ap.add_argument("--told", nargs="*", choices=TOLD, default=list(TOLD))
    ap.add_argument("--declare", nargs="*", default=[], metavar="SHARE[:FACTOR]",
                    help="runs with jobs declaring their run time (told nothing else)")
    ap.add_argument("--trace", default=PHILLY)
    ap.add_argument("--smoke", action="store_true", help=SMOKE_HELP)
    args = ap.parse_args()
    key, sc = ("smoke", tiny_scenario()) if args.smoke else (args.scenario, bench.scenario(args.scenario, args.trace))
    sc = dataclasses.replace(sc, eta=True)
    for told in args.told:
        print(json.dumps(measure(key, sc, told)), flush=True)
    for declare in args.declare or (["1:2"] if args.smoke else []):
        print(json.dumps(measure(key, sc, "none", declare)), flush=True)


if __name__ == "__main__":
    main()
