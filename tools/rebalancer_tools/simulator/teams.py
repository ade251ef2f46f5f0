"""Teams of a simulated cluster: weight and the quota an admin would set by hand (the guarantee)."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from rebalancer.errors import InvalidInput
from rebalancer.loading import MAX_NUMBER, short
from rebalancer.policy import TEAM_NAME
from rebalancer_tools.simulator.csv_rows import csv_rows
from rebalancer_tools.simulator.trace import TraceJob


@dataclass(frozen=True, slots=True)
class TeamSpec:
    name: str
    weight: float
    quota: int  # GPUs: the hand-set compute quota (static and builtin use it; rebalancer starts from it)


def _largest_remainder(shares: Sequence[float], total: int) -> list[int]:
    base = [int(s) for s in shares]
    order = sorted(range(len(shares)), key=lambda i: (-(shares[i] - base[i]), i))
    for i in order[: max(0, total - sum(base))]:
        base[i] += 1
    return base


def default_teams(jobs: Sequence[TraceJob], capacity: int, gpus_per_node: int) -> list[TeamSpec]:
    """Equal weights; quotas proportional to each team's GPU-hours in the trace, in whole nodes where the share is
    at least a node, at least one GPU for every team, summing to the capacity."""
    hours: dict[str, float] = defaultdict(float)
    for j in jobs:
        hours[j.team] += j.gpus * j.duration_s
    names = sorted(hours)
    total = sum(hours.values())
    share = {t: capacity * hours[t] / total for t in names}
    small = [t for t in names if share[t] < gpus_per_node]
    quota = {t: max(1, round(share[t])) for t in small}
    big = [t for t in names if t not in quota]
    rest = capacity - sum(quota.values())
    if big and rest > 0:
        big_total = sum(hours[t] for t in big)
        nodes = _largest_remainder([rest // gpus_per_node * hours[t] / big_total for t in big], rest // gpus_per_node)
        for t, n in zip(big, nodes, strict=True):
            quota[t] = n * gpus_per_node
        quota[max(big, key=lambda t: (hours[t], t))] += rest % gpus_per_node
    else:
        quota.update(dict.fromkeys(big, 0))
    return [TeamSpec(t, 1.0, quota[t]) for t in names]


def load_teams(path: str | Path) -> list[TeamSpec]:
    """CSV `team,weight,guarantee` (guarantee in GPUs: the team's hand-set quota)."""
    teams: list[TeamSpec] = []
    for where, row in csv_rows(path, "teams file", ("team", "weight", "guarantee")):
        name, weight, guarantee = row
        if not TEAM_NAME.fullmatch(name):
            raise InvalidInput(f"invalid team name {short(name)}", source=where, field="team", value=name)
        try:
            w = float(weight)
            g = int(guarantee)
        except ValueError:
            raise InvalidInput(f"weight must be a number and guarantee a whole number of GPUs, got "
                               f"{short(weight)}, {short(guarantee)}", source=where, value=row) from None
        if not math.isfinite(w) or w < 0 or g < 0 or max(w, g) > MAX_NUMBER:
            raise InvalidInput(f"weight and guarantee must be finite and not negative, got {short(weight)}, "
                               f"{short(guarantee)}",
                               source=where, value=row)
        teams.append(TeamSpec(name, w, g))
    if not teams:
        raise InvalidInput("no teams in the file", source=str(path))
    return teams
