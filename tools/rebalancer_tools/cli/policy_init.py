"""`rebalancer policy init`: the policy that describes a cluster as it is today, to start from. Each team with a
quota gets a weight in proportion to the accelerators its quota holds (so when every team wants more, the fair
shares are today's split), no guarantee or cap yet (the comments say where to add them), and the quota's own
sharing, preemption and fair-share weight, so `rebalancer diff` finds it in sync. Mode dry-run: nothing is written
until the admin changes it. Disabled quotas are listed as `remove: true` (they stay deactivated)."""

from __future__ import annotations

import json
import math
from functools import reduce

from rebalancer.domain.pools import holdings
from rebalancer.domain.quotas import ComputeQuota
from rebalancer.domain.snapshot import Snapshot

HEADER = """\
# The policy of {cluster} as it is today ({taken_at}), written by `rebalancer policy init`.
# Weights are in proportion to the accelerators each team's quota holds now; sharing, preemption and fair-share
# weights are the quotas' own, so `rebalancer diff` finds the cluster in sync with this file.
# Next: add guarantees (what a team keeps whatever its demand) and caps, then `rebalancer plan --cluster {cluster}`.
# mode: dry-run plans and notifies but writes nothing; switch to approve, then auto (README "The first hour").
mode: dry-run
"""


def _scalar(value: object) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return json.dumps(value) if isinstance(value, str) and not value.isalnum() else str(value)


def _weights(quotas: list[ComputeQuota]) -> dict[str, int]:
    """Each team's accelerators (or vCPUs) held, divided by their greatest common divisor; 1 for an empty quota."""
    held = {q.team: round(sum(holdings(q).values())) for q in quotas}
    divisor = reduce(math.gcd, [n for n in held.values() if n], 0) or 1
    return {team: max(1, n // divisor) for team, n in held.items()}


def _sharing(q: ComputeQuota) -> str | None:
    config = q.ComputeQuotaConfig.ResourceSharingConfig
    if config is None:
        return None
    parts = [f"strategy: {config.Strategy}"]
    if config.Strategy != "LendAndBorrow":  # a borrow limit means nothing without borrowing (the policy refuses it)
        return "{" + parts[0] + "}"
    if config.BorrowLimit is not None:
        parts.append(f"borrow_limit: {config.BorrowLimit}")
    if config.AbsoluteBorrowLimits:
        limits = ", ".join(f"{r.InstanceType}: {_scalar(r.Accelerators if r.Accelerators is not None else r.VCpu)}"
                           for r in config.AbsoluteBorrowLimits)
        parts.append(f"absolute_borrow_limits: {{{limits}}}")
    return "{" + ", ".join(parts) + "}"


def policy_text(snapshot: Snapshot) -> str:
    quotas = sorted(snapshot.quotas, key=lambda q: q.team)
    lines = [HEADER.format(cluster=snapshot.cluster.ClusterName, taken_at=f"{snapshot.taken_at:%Y-%m-%d %H:%M} UTC"),
             "teams:"]
    weights = _weights([q for q in quotas if q.ActivationState != "Disabled"])
    if not quotas:
        lines[-1] = "teams: {}  # the cluster has no compute quota yet: add a team per namespace"
    for q in quotas:
        if q.ActivationState == "Disabled":
            lines.append(f"  {q.team}: {{remove: true}}  # its quota is deactivated")
            continue
        held = ", ".join(f"{pool} {_scalar(n)}" for pool, n in sorted(holdings(q).items()))
        lines.append(f"  {q.team}:  # holds {held or 'nothing'}")
        lines.append(f"    weight: {weights[q.team]}")
        sharing = _sharing(q)
        if sharing:
            lines.append(f"    sharing: {sharing}")
        if q.ComputeQuotaConfig.PreemptTeamTasks:
            lines.append(f"    preempt_team_tasks: {q.ComputeQuotaConfig.PreemptTeamTasks}")
        if q.ComputeQuotaTarget.FairShareWeight is not None:
            lines.append(f"    fair_share_weight: {q.ComputeQuotaTarget.FairShareWeight}")
    return "\n".join(lines) + "\n"
