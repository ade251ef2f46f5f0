from __future__ import annotations

import pytest

from rebalancer_tools.simulator.metrics import entitlements, jain, percentile


def test_entitlements_caps_at_demand_and_splits_the_rest_by_weight() -> None:
    assert entitlements(10, [1, 1, 1], [2, 8, 8]) == pytest.approx([2, 4, 4])
    assert entitlements(12, [1, 2, 0], [100, 100, 5]) == pytest.approx([4, 8, 0])


def test_entitlements_gives_everyone_their_demand_when_it_fits() -> None:
    assert entitlements(100, [1, 3], [10, 0]) == [10.0, 0.0]


def test_jain_index() -> None:
    assert jain([1, 1, 1, 1]) == pytest.approx(1.0)
    assert jain([1, 0, 0, 0]) == pytest.approx(0.25)
    assert jain([1, 2]) == pytest.approx(9 / 10)


def test_percentile_interpolates_like_numpy() -> None:
    values = [1.0, 2.0, 3.0, 4.0]
    assert percentile(values, 50) == pytest.approx(2.5)
    assert percentile(values, 95) == pytest.approx(3.85)
    assert percentile([], 50) == 0.0
