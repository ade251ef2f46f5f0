"""The engine's input read from a snapshot and a policy: one claim per policy team and pool."""

from __future__ import annotations

from datetime import timedelta

from support.clusters import T0, policy, snapshot

from rebalancer.engine.allocation import INF, Claim
from rebalancer.engine.stability import cooling_down
from rebalancer.planning.pools import build_pools

P5, C5 = "ml.p5.48xlarge", "ml.c5.4xlarge"


def test_a_claim_carries_the_teams_demand_quota_and_policy_amounts() -> None:
    snap = snapshot({P5: 2, C5: 1}, quotas={"a": {P5: 8, C5: 4}, "b": {P5: 4}},
                    in_use={"a": {P5: 3.5}}, pending={"a": {P5: 2, C5: 6.2}},
                    modified={"b": T0 - timedelta(minutes=5)})
    pol = policy({"a": {"weight": 2, "guarantee": {P5: "50%"}, "cap": {C5: 12}, "protected_in_use": True},
                  "b": {}}, stability={"cooldown_minutes": 30, "max_move": None})
    pools, _ = build_pools(snap, pol, T0)
    claims = {(p.key, c.team): c for p in pools for c in p.claims}
    # Demand is in use + pending rounded up; a percent guarantee is of the pool's healthy capacity (16 GPUs).
    assert claims[P5, "a"] == Claim("a", 2.0, 8.0, INF, 6.0, 8.0, 3.5, True, None, ())
    assert claims[C5, "a"] == Claim("a", 2.0, 0.0, 12.0, 7.0, 4.0, 0.0, True, None, ())
    assert claims[C5, "b"] == Claim("b", 1.0, 0.0, INF, 0.0, 0.0, 0.0, False,
                                    cooling_down(T0 - timedelta(minutes=5), T0, 30), ())
    assert [(p.key, p.resource, p.capacity) for p in pools] == [(C5, "vcpu", 16.0), (P5, "accelerators", 16.0)]


def test_teams_outside_the_policy_and_removed_teams_have_no_claim() -> None:
    snap = snapshot({P5: 2}, quotas={"a": {P5: 4}, "legacy": {P5: 6}, "gone": {P5: 2}})
    pools, warnings = build_pools(snap, policy({"a": {}, "gone": {"remove": True}}), T0)
    assert [c.team for c in pools[0].claims] == ["a"]
    assert pools[0].capacity == 10.0  # 16 healthy minus what legacy holds
    assert pools[0].notes == ("6 held by teams outside the policy",)
    assert warnings == ["teams with a quota but not in the policy keep it untouched: legacy"]
