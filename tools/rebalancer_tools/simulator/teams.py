"""Teams of a simulated cluster: weight and the quota an admin would set by hand (the guarantee)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from rebalancer.catalog import specs as catalog
from rebalancer.domain.policy import MAX_WEIGHT, MIN_WEIGHT, TEAM_NAME
from rebalancer.errors import InvalidInput
from rebalancer.parsing.loading import MAX_NUMBER
from rebalancer.parsing.text import short
from rebalancer_tools.simulator.csv_rows import csv_rows
from rebalancer_tools.simulator.trace import TraceJob


@dataclass(frozen=True, slots=True)
class TeamSpec:
    name: str
    weight: float
    quota: int  # GPUs: the hand-set compute quota (static and builtin use it; rebalancer starts from it)
    # With several pools: the hand-set quota per instance type (`quota` is then their sum). Empty: `quota` is of
    # the cluster's first pool.
    quotas: tuple[tuple[str, int], ...] = ()

    def quota_in(self, instance_type: str, first: str) -> int:
        """The hand-set quota of one instance type; `first` is the cluster's first pool."""
        if self.quotas:
            return dict(self.quotas).get(instance_type, 0)
        return self.quota if instance_type == first else 0


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


def default_pool_teams(jobs_by_pool: Sequence[tuple[str, Sequence[TraceJob], int, int]]) -> list[TeamSpec]:
    """`default_teams` in each pool (instance type, its jobs, capacity, accelerators per node): equal weights, and
    in each pool quotas proportional to the team's accelerator-hours there."""
    per_pool = {itype: {t.name: t.quota for t in default_teams(jobs, capacity, per_node)} if jobs else {}
                for itype, jobs, capacity, per_node in jobs_by_pool}
    names = sorted({name for quotas in per_pool.values() for name in quotas})
    out = []
    for name in names:
        quotas = tuple((itype, per_pool[itype].get(name, 0)) for itype, *_ in jobs_by_pool)
        out.append(TeamSpec(name, 1.0, sum(q for _, q in quotas), quotas))
    return out


def load_teams(path: str | Path, labels: Mapping[str, str] | None = None) -> list[TeamSpec]:
    """CSV `team,weight,guarantee` (guarantee in GPUs: the team's hand-set quota), optionally a fourth column
    `instance_type` with one row per team and type (the quota of that type). `team` may be a label of the trace
    (`labels`: label → team name) or a team name."""
    rows: dict[str, tuple[float, dict[str, int]]] = {}
    typed = False
    for where, row in csv_rows(path, "teams file", ("team", "weight", "guarantee"), optional="instance_type"):
        label, weight, guarantee, itype = row
        name = (labels or {}).get(label, label)
        if not TEAM_NAME.fullmatch(name):
            raise InvalidInput(f"invalid team name {short(name)}", source=where, field="team", value=name)
        try:
            w = float(weight)
            g = int(guarantee)
        except ValueError:
            raise InvalidInput(f"weight must be a number and guarantee a whole number of GPUs, got "
                               f"{short(weight)}, {short(guarantee)}", source=where, value=row) from None
        if not (w == 0 or MIN_WEIGHT <= w <= MAX_WEIGHT) or not 0 <= g <= MAX_NUMBER:
            raise InvalidInput(f"weight must be 0 or from {MIN_WEIGHT:g} to {MAX_WEIGHT:g} and guarantee a whole "
                               f"number >= 0, got {short(weight)}, {short(guarantee)}", source=where, value=row)
        if itype and itype not in catalog.known_types():
            raise InvalidInput(f"{short(itype)} is not a HyperPod instance type", source=where,
                               field="instance_type", value=itype)
        typed = typed or bool(itype)
        if name in rows:
            if rows[name][0] != w or itype in rows[name][1] or not itype:
                raise InvalidInput(f"team {short(name)} given twice (one row per team and instance type, with "
                                   f"the same weight)", source=where, field="team", value=label)
            rows[name][1][itype] = g
        else:
            rows[name] = (w, {itype: g})
    if not rows:
        raise InvalidInput("no teams in the file", source=str(path))
    if not typed:
        return [TeamSpec(name, w, q[""]) for name, (w, q) in rows.items()]
    if any("" in q for _, q in rows.values()):
        raise InvalidInput("instance_type is blank on some rows: give it on every row or on none", source=str(path),
                           field="instance_type")
    return [TeamSpec(name, w, sum(q.values()), tuple(q.items())) for name, (w, q) in rows.items()]
