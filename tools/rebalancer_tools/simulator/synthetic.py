"""Synthetic multi-team GPU job traces, seeded, so that a policy is judged on more than one real trace.

Four kinds of team, each a stream of jobs with a target average load (GPUs busy on average):
- `steady`: Poisson arrivals, exponential durations, 1–8 GPU jobs;
- `diurnal`: arrivals follow the working day (peak at 14:00 UTC, near nothing at night), short jobs;
- `bursty`: quiet, then a burst of many jobs at once (a sweep) every few days;
- `heavy_tailed`: few jobs with log-normal durations and large gang sizes (pretraining runs), most of the GPU-hours
  in a few jobs.
The load of each team is met on average over the trace (the arrival rate is set from the mean job size × duration),
so a generated trace can be tuned to overload a cluster by a stated factor. A team may run on one instance type of
a cluster with several (`pool_teams`: e.g. some teams on ml.p5.48xlarge, others on ml.trn1.32xlarge); its jobs then
carry that `instance_type` and their gang sizes are in that type's accelerators per node.
"""

from __future__ import annotations

import contextlib
import csv
import math
import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import IO, Literal

from rebalancer.catalog import specs as catalog
from rebalancer_tools.simulator.trace import COLUMNS, TYPE_COLUMN, TraceJob

Kind = Literal["steady", "diurnal", "bursty", "heavy_tailed"]
KINDS: tuple[Kind, ...] = ("steady", "diurnal", "bursty", "heavy_tailed")
HOUR = 3600.0
DAY = 24 * HOUR


@dataclass(frozen=True, slots=True)
class TeamLoad:
    name: str
    kind: Kind
    gpus: float  # average GPUs busy
    instance_type: str = ""  # '' : the cluster's first pool, with `generate`'s gpus_per_node


def _sizes(rng: random.Random, kind: Kind, gpus_per_node: int) -> int:
    if kind == "heavy_tailed":
        return gpus_per_node * rng.choice((2, 4, 4, 8, 16))
    if kind == "bursty":
        return rng.choice((1, 2, 4, gpus_per_node))
    return rng.choice((1, 1, 2, 4, gpus_per_node))


def _duration(rng: random.Random, kind: Kind) -> float:
    if kind == "heavy_tailed":
        return min(rng.lognormvariate(math.log(12 * HOUR), 1.0), 14 * DAY)
    if kind == "diurnal":
        return rng.expovariate(1 / (1.5 * HOUR)) + 60
    if kind == "bursty":
        return rng.expovariate(1 / (3 * HOUR)) + 60
    return rng.expovariate(1 / (4 * HOUR)) + 60


@cache
def _mean_work(kind: Kind, gpus_per_node: int) -> float:
    """GPU-seconds of an average job of this kind (estimated from draws of the same generator, its own seed: a
    function of the two arguments alone, so computed once per process)."""
    rng = random.Random(f"{kind}/{gpus_per_node}")
    draws = [_sizes(rng, kind, gpus_per_node) * _duration(rng, kind) for _ in range(4000)]
    return sum(draws) / len(draws)


# The day's mean of _diurnal_weight: max(0, cos)² averages 1/4 over a period.
DIURNAL_MEAN = 0.05 + 0.95 / 4


def _diurnal_weight(t: float) -> float:
    """Relative arrival rate at time t: a working day peaking at 14:00 UTC, 5 % of the peak at night."""
    hour = (t % DAY) / HOUR
    return 0.05 + 0.95 * max(0.0, math.cos((hour - 14) / 24 * 2 * math.pi)) ** 2


def _team_jobs(rng: random.Random, team: TeamLoad, days: float, gpus_per_node: int) -> Iterator[TraceJob]:
    if team.instance_type:
        gpus_per_node = catalog.spec(team.instance_type).accelerators
    end = days * DAY
    rate = team.gpus / _mean_work(team.kind, gpus_per_node)
    n = 0
    if team.kind == "bursty":
        every = 3 * DAY
        per_burst = max(1, round(rate * every))
        t = rng.uniform(0, every)
        while t < end:
            for _ in range(per_burst):
                n += 1
                yield TraceJob(f"{team.name}-{n}", team.name, t + rng.uniform(0, 600), _duration(rng, team.kind),
                               _sizes(rng, team.kind, gpus_per_node), instance_type=team.instance_type)
            t += rng.uniform(0.5 * every, 1.5 * every)
        return
    peak = rate / DIURNAL_MEAN if team.kind == "diurnal" else rate
    t = 0.0
    while True:
        t += rng.expovariate(peak)  # thinning: candidate arrivals at the peak rate, kept by the day's weight
        if t >= end:
            return
        if team.kind == "diurnal" and rng.random() > _diurnal_weight(t):
            continue
        n += 1
        yield TraceJob(f"{team.name}-{n}", team.name, t, _duration(rng, team.kind),
                       _sizes(rng, team.kind, gpus_per_node), instance_type=team.instance_type)


def generate(teams: Sequence[TeamLoad], *, days: float, seed: int, gpus_per_node: int = 8) -> list[TraceJob]:
    """Jobs of every team, sorted by submit time; the same seed gives the same trace."""
    jobs: list[TraceJob] = []
    for team in teams:
        jobs += _team_jobs(random.Random(f"{seed}/{team.name}/{team.kind}"), team, days, gpus_per_node)
    jobs.sort(key=lambda j: (j.submit_s, j.job_id))
    return [TraceJob(j.job_id, j.team, round(j.submit_s, 1), round(j.duration_s, 1), j.gpus,
                     instance_type=j.instance_type) for j in jobs]


def default_teams(count: int, capacity: int, load: float, kinds: Sequence[Kind] = KINDS, *, first: int = 1,
                  instance_type: str = "") -> list[TeamLoad]:
    """`count` teams cycling through `kinds`, sharing `load` × capacity GPUs of average demand unevenly
    (team i gets a share ∝ 1/(i+1), so some teams are large and most are small). Names start at team-`first`."""
    shares = [1 / (i + 1) for i in range(count)]
    total = sum(shares)
    return [TeamLoad(f"team-{first + i:02d}", kinds[i % len(kinds)], load * capacity * s / total, instance_type)
            for i, s in enumerate(shares)]


def pool_teams(count: int, pools: Sequence[tuple[str, int]], load: float,
               kinds: Sequence[Kind] = KINDS) -> list[TeamLoad]:
    """`count` teams over several pools (instance type, accelerators): each pool gets a number of teams in
    proportion to its capacity (at least one) and `load` × its capacity of demand, shared as in `default_teams`."""
    total = sum(c for _, c in pools)
    counts = [max(1, round(count * c / total)) for _, c in pools]
    counts[0] = max(1, count - sum(counts[1:]))
    out: list[TeamLoad] = []
    for (itype, capacity), n in zip(pools, counts, strict=True):
        out += default_teams(n, capacity, load, kinds, first=len(out) + 1, instance_type=itype)
    return out


def write_csv(jobs: Sequence[TraceJob], out: Path | IO[str]) -> None:
    typed = any(j.instance_type for j in jobs)
    with out.open("w", newline="") if isinstance(out, Path) else contextlib.nullcontext(out) as f:
        w = csv.writer(f)
        w.writerow((*COLUMNS, TYPE_COLUMN) if typed else COLUMNS)
        for j in jobs:
            row = (j.job_id, j.team, f"{j.submit_s:g}", f"{j.duration_s:g}", j.gpus)
            w.writerow((*row, j.instance_type) if typed else row)
