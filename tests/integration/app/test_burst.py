"""Many clusters, one deployment: a burst of mixed events across 20 managed clusters, with runs ending at random
points of it (rebalancer_tools.local.burst). At most one run per cluster at a time, and no change lost: every event is
followed by a run of its cluster that started after it arrived. The settle time of the full 1,000-event burst is
measured by `make bench` (benchmarks/burst_bench.py, 50 clusters), not here: 20 clusters and 160 events already
interleave every outcome (starts, debounces, follow-ups, runs ending mid-burst, malformed and foreign events)."""

from __future__ import annotations

import pytest

from rebalancer_tools.local.burst import run_burst

pytestmark = pytest.mark.slow


def test_a_burst_across_twenty_clusters_runs_one_at_a_time_per_cluster_and_loses_nothing() -> None:
    result = run_burst(clusters=20, events=160, seed=11)
    assert result.overlaps == 0, result.summary()
    assert result.lost == [], result.summary()
    assert result.outcomes["started"] >= 16  # nearly every cluster got a run from the burst itself
    assert result.followups > 0  # changes during runs were planned by follow-ups, not dropped
    # Debouncing works: fewer runs than events (one per event would be 160 plus the schedules' 20 each).
    assert result.runs < 160
    assert result.outcomes["malformed"] + result.outcomes["ignored"] > 0
