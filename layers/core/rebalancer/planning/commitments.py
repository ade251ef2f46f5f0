"""A policy that cannot be kept, said before it is planned on: per instance type, and per instance family a team's
guarantee names, what the policy promises (each team's guarantee, or what its active reservations hold when that is
more) against the healthy capacity guarantees can stand on (rebalancer.planning.capacity: the nodes counted now that
last, spot excluded unless the policy allows). The engine then scales guarantees down to fit (and a team without one
may get nothing); these lines say so in advance, naming the teams and the totals, on every path that reads a policy
against a cluster: the planner's warnings (the controller, `plan`, `apply`), `diff` (exit 3) and `policy push`.
MIG pools are left out (their partitions are counted apart). Pure."""

from collections import defaultdict
from collections.abc import Mapping, Sequence
from datetime import datetime

from rebalancer.catalog import specs as catalog
from rebalancer.domain.policy import Policy, family_types
from rebalancer.domain.reservation import Reservation
from rebalancer.domain.snapshot import Snapshot
from rebalancer.planning import capacity

EPS = 1e-9


def commitment_warnings(snapshot: Snapshot, policy: Policy, reservations: Sequence[Reservation] = (), *,
                        unavailable_since: Mapping[str, tuple[str, datetime]] | None = None) -> list[str]:
    """One line per instance type and per family whose promises sum above what guarantees can stand on.
    `unavailable_since`: the planning context's, so a node within its grace counts as the plan counts it."""
    seen = {node: since for node, (_, since) in (unavailable_since or {}).items()}
    counted = capacity.of_snapshot(snapshot, policy, seen)
    lasting = {t: float(counted.of(t).lasting * catalog.spec(t).primary_per_instance)
               for t in counted.by_type if t in catalog.known_types()}
    teams = {name: tp for name, tp in policy.teams.items() if not tp.remove}
    reserved: dict[tuple[str, str], float] = defaultdict(float)
    for r in reservations:
        if r.active_at(snapshot.taken_at) and r.team in teams:
            reserved[(r.team, r.pool)] += r.accelerators
    out = []
    keys = {k for tp in teams.values() for k in tp.guarantee if ":" not in k} | {pool for _, pool in reserved}
    for key in sorted(k for k in keys if not family_types(k)):
        total = lasting.get(key, 0.0)
        held = {}
        for name, tp in teams.items():
            g, kept = tp.guarantee_for(key, total), reserved.get((name, key), 0.0)
            if max(g, kept) > EPS:
                held[name] = (max(g, kept), "reserved" if kept > g else "guaranteed")
        if sum(a for a, _ in held.values()) > total + EPS:
            out.append(_line(key, total, held))
    for family in sorted(k for k in keys if family_types(k)):
        members = [t for t in family_types(family) if t in lasting]
        total = sum(lasting[t] for t in members)
        held = {}
        for name, tp in teams.items():
            amount = tp.guarantee_for(family, total) + sum(
                max(tp.guarantee_for(t, lasting[t]), reserved.get((name, t), 0.0)) for t in members)
            if amount > EPS:
                held[name] = (amount, "guaranteed")
        if sum(a for a, _ in held.values()) > total + EPS:
            out.append(_line(f"family {family}", total, held))
    return out


def _line(what: str, total: float, held: Mapping[str, tuple[float, str]]) -> str:
    promised = sum(a for a, _ in held.values())
    teams = ", ".join(f"{name} {amount:g} {how}" for name, (amount, how) in sorted(held.items()))
    return (f"guarantees and reservations on {what} sum to {promised:g}, above its healthy capacity of {total:g} "
            f"(guarantees are scaled down to fit, and a team without one may get nothing): {teams}")
