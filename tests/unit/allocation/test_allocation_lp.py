"""The engine against an exact reference: weighted max-min fairness by progressive filling with HiGHS."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from support.lp_fairness import reference_shares
from support.props import properties

from rebalancer.engine.allocation import INF, Claim, PoolInput, Settings, allocate, fair_shares


@st.composite
def cases(draw: st.DrawFn) -> tuple[PoolInput, str]:
    n = draw(st.integers(1, 5))
    claims = []
    for i in range(n):
        cap = draw(st.one_of(st.just(INF), st.integers(0, 40).map(float)))
        claims.append(Claim(f"t{i}", float(draw(st.integers(0, 5))), float(min(draw(st.integers(0, 10)), cap)),
                            cap, float(draw(st.integers(0, 40)))))
    return PoolInput.of("p", "accelerators", float(draw(st.integers(0, 64))), tuple(claims)), draw(
        st.sampled_from(["idle", "spread"]))


@properties(60)
@given(cases())
def test_engine_matches_progressive_filling_lp(case: tuple[PoolInput, str]) -> None:
    pool, surplus = case
    cs = pool.claims
    ref = reference_shares(pool.capacity, [c.weight for c in cs], [c.guarantee for c in cs],
                           [c.demand for c in cs], [c.cap for c in cs], surplus)
    shares, _ = fair_shares(pool, surplus)  # type: ignore[arg-type]
    assert shares == pytest.approx(ref, abs=1e-6)
    result = allocate([pool], Settings(surplus=surplus, max_move=None))  # type: ignore[arg-type]
    for o, r in zip(result.pools[0].outcomes, ref, strict=True):
        assert abs(o.after - r) < 1 + 1e-6
