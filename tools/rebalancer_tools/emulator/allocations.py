"""What each cluster's compute quotas ask for in all, kept up to date quota by quota.

The invariant is checked before and after every quota write; summing every quota of the cluster each time made a
cluster of 1,000 quotas quadratic (2,520 rescans of 1,000 quotas in one e2e test). Here a write replaces what one
quota asks for, and only the (instance type, resource) keys it asked or asks for are summed again, over the quotas
that ask for them.

A total is `math.fsum` of its quotas' amounts: exact, so it does not depend on the order in which quotas were
counted and a key whose last quota leaves is dropped, not left at a rounding residue.
"""

from __future__ import annotations

import math

from rebalancer_tools.emulator.capacity import Key


class Allocations:
    def __init__(self) -> None:
        self._asks: dict[str, tuple[str, dict[Key, float]]] = {}  # quota id -> (cluster ARN, its nonzero amounts)
        self._by_key: dict[str, dict[Key, dict[str, float]]] = {}  # cluster ARN -> key -> quota id -> amount
        self._totals: dict[str, dict[Key, float]] = {}  # cluster ARN -> key -> sum of the amounts

    def count(self, quota_id: str, cluster_arn: str, asked: dict[Key, float]) -> None:
        """From now on quota `quota_id` of `cluster_arn` asks for `asked` (zeros left out); {} when it asks for
        nothing (deleted, disabled, a create that failed)."""
        old_cluster, old = self._asks.get(quota_id, (cluster_arn, {}))
        if (old_cluster, old) == (cluster_arn, asked):
            return
        for key in old:
            self._by_key[old_cluster][key].pop(quota_id)
        for key, amount in asked.items():
            self._by_key.setdefault(cluster_arn, {}).setdefault(key, {})[quota_id] = amount
        if asked:
            self._asks[quota_id] = (cluster_arn, asked)
        else:
            self._asks.pop(quota_id, None)
        for where, key in {(old_cluster, k) for k in old} | {(cluster_arn, k) for k in asked}:
            self._resum(where, key)

    def of(self, cluster_arn: str) -> dict[Key, float]:
        """Per (instance type, resource) asked for at all, what the cluster's quotas ask for in all."""
        return dict(self._totals.get(cluster_arn, {}))

    def _resum(self, cluster_arn: str, key: Key) -> None:
        amounts = self._by_key[cluster_arn][key]
        totals = self._totals.setdefault(cluster_arn, {})
        if amounts:
            totals[key] = math.fsum(amounts.values())
        else:
            del self._by_key[cluster_arn][key]
            totals.pop(key, None)
