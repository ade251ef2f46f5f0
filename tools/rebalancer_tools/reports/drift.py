"""Drift: what differs between the policy and the cluster, field by field. Pure.

Reported: quota settings the policy states (sharing, preemption, fair-share weight, explicit vCPU / memory),
team lifecycle (a policy team without a quota, a `remove: true` team still active, a deactivated quota of a policy
team), the scheduler config, and allocations that break the policy (above a cap, a family's sum above its family
cap, below a guarantee that fits, or quotas adding up to more than a pool's healthy capacity), and policy teams
whose quota CloudFormation owns (held outside the policy, see ownership.py). Allocations that merely differ from
what demand would justify are not drift: that is rebalancing (`rebalancer plan`).
A difference is a console edit when the quota's version is not the one our last write left (`known_versions`,
from the audit log), or when that is unknown."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rebalancer.domain.ownership import MANAGED_BY, stack_owned
from rebalancer.domain.plan import CLUSTER
from rebalancer.domain.policy import Policy
from rebalancer.domain.snapshot import Snapshot
from rebalancer.engine.allocation import EPS, PoolInput
from rebalancer.planning.cluster_policy import plan_scheduler_config
from rebalancer.planning.pools import build_pools
from rebalancer.planning.requests import setting_changes


@dataclass(frozen=True, slots=True)
class Drift:
    subject: str  # a team, or "(cluster)"
    field: str
    cluster: Any  # what the cluster has (None: absent)
    policy: Any  # what the policy wants (None: absent)
    console_edit: bool = False
    note: str = ""

    def line(self) -> str:
        edit = " [console edit]" if self.console_edit else ""
        note = f"  ({self.note})" if self.note else ""
        return f"{self.subject}: {self.field}: cluster {_show(self.cluster)} ≠ policy {_show(self.policy)}{edit}{note}"

    def as_json(self) -> dict[str, Any]:
        return {"subject": self.subject, "field": self.field, "cluster": self.cluster, "policy": self.policy,
                "console_edit": self.console_edit, "note": self.note}


def _show(value: Any) -> str:
    """A whole float as an integer (32, not 32.0): the API returns vCPU and memory as floats."""
    if value is None:
        return "(absent)"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def find_drift(snapshot: Snapshot, policy: Policy, *,
               known_versions: Mapping[str, int] | None = None) -> list[Drift]:
    out: list[Drift] = []
    if policy.cluster is not None and policy.cluster.manages_scheduler_config:
        _, fields = plan_scheduler_config(
            snapshot.cluster.ClusterName, snapshot.cluster.ClusterArn, snapshot.scheduler_config, policy.cluster,
            known_version=None if known_versions is None else known_versions.get(CLUSTER))
        out += [Drift(CLUSTER, f.field, f.before, f.after, f.console_edit) for f in fields]
    for f in setting_changes(snapshot, policy, known_versions):
        if f.field == "ComputeQuotaVersion":
            continue
        note = f.reason if not f.console_edit else ""
        out.append(Drift(f.team, f.field, f.before, f.after, f.console_edit, note))
    out += _allocation_breaches(snapshot, policy)
    for team, stack in sorted(stack_owned(snapshot).items()):
        if team in policy.teams:  # said rather than silently skipped: the policy names a team it cannot manage
            out.append(Drift(team, "owner", f"CloudFormation stack {stack}", MANAGED_BY,
                             note="held outside the policy and never rewritten: the stack would revert it or report "
                                  "drift; change it in the stack, or remove the team from the policy"))
    return out


def _allocation_breaches(snapshot: Snapshot, policy: Policy) -> list[Drift]:
    out: list[Drift] = []
    pools, _ = build_pools(snapshot, policy, snapshot.taken_at)
    for pool in pools:
        held = sum(c.current for c in pool.claims)
        if held > math.floor(pool.capacity + EPS) + EPS:
            out.append(Drift(CLUSTER, f"quotas of {pool.key}", held, f"≤ {pool.capacity:g}",
                             note="quotas add up to more than the healthy capacity"))
        guarantees_fit = sum(c.guarantee for c in pool.claims) <= pool.capacity + EPS
        for c in pool.claims:
            if c.current > c.cap + EPS:
                out.append(Drift(c.team, f"allocation of {pool.key}", c.current, f"≤ cap {c.cap:g}",
                                 note="above the policy's cap"))
            elif guarantees_fit and c.current < c.guarantee - EPS:
                out.append(Drift(c.team, f"allocation of {pool.key}", c.current, f"≥ guarantee {c.guarantee:g}",
                                 note="below the policy's guarantee"))
    out += _family_breaches(pools)
    return out


def _family_breaches(pools: list[PoolInput]) -> list[Drift]:
    """A family cap bounds a team's sum over the family's pools (each pool lists it), not any one pool."""
    held: dict[tuple[str, str], list[tuple[str, float]]] = {}
    amount: dict[tuple[str, str], float] = {}
    for pool in pools:
        current = dict(zip(pool.claims.team, pool.claims.current, strict=True))
        for b in pool.families:
            held.setdefault((b.team, b.key), []).append((pool.key, current.get(b.team, 0.0)))
            amount[b.team, b.key] = b.amount
    out = []
    for (team, key), parts in sorted(held.items()):
        total = sum(n for _, n in parts)
        if total > amount[team, key] + EPS:
            out.append(Drift(team, f"allocation of {key}", total, f"≤ family cap {amount[team, key]:g}",
                             note="above the policy's family cap: the sum over "
                                  + ", ".join(f"{p} {n:g}" for p, n in parts)))
    return out
