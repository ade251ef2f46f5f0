"""The likely range's levels adapt to how its starts turned out (rebalancer.planning.eta.adapted): an end the
starts fall beyond moves out, one they fall within moves in, so that each end misses SIDE_MISS of them however the
errors drift; the plan step keeps the levels in the run history, and a history written before them still loads."""

from __future__ import annotations

import math
import random
from datetime import timedelta

from hypothesis import given
from hypothesis import strategies as st
from support.clusters import T0
from support.clusters import snapshot as cluster
from support.props import properties

from rebalancer.domain.outlook import Outcome, RunHistory, Told, WorkloadEta
from rebalancer.domain.snapshot import PendingWorkload, RunningWorkload, Snapshot
from rebalancer.planning import eta

P5 = "ml.p5.48xlarge"
H = timedelta(hours=1)
SPAN = (10.0, 20.0)  # a likely range, in seconds


def test_an_end_the_starts_fall_beyond_widens_and_one_they_fall_within_narrows() -> None:
    low, high = eta.LEVELS
    late = eta.adapted(eta.LEVELS, 25.0, SPAN)
    assert late == (low + eta.GAMMA * eta.SIDE_MISS, high + eta.GAMMA * (1 - eta.SIDE_MISS))
    early = eta.adapted(eta.LEVELS, 5.0, SPAN)
    assert early == (low - eta.GAMMA * (1 - eta.SIDE_MISS), high - eta.GAMMA * eta.SIDE_MISS)
    hit = eta.adapted(eta.LEVELS, 15.0, SPAN)
    assert hit[0] > low
    assert hit[1] < high
    assert eta.adapted(eta.LEVELS, 1e9, (10.0, None)) == hit  # no later bound: never late
    # a run of misses widens the band read at the levels; past the extremes, the extremes raised to the level
    ratios = [0.5 + k / 20 for k in range(40)]  # 0.5 … 2.45
    lates, earlies = eta.LEVELS, eta.LEVELS
    for _ in range(10):
        lates, earlies = eta.adapted(lates, 25.0, SPAN), eta.adapted(earlies, 5.0, SPAN)
    assert eta.error_band(ratios, lates)[1] > eta.error_band(ratios, eta.LEVELS)[1]
    assert eta.error_band(ratios, earlies)[0] < eta.error_band(ratios, eta.LEVELS)[0]
    assert eta.error_band(ratios, (0.0, 1.0)) == (0.5, 2.45)
    assert eta.error_band(ratios, (-1.0, 2.0)) == (0.25, 2.45**2)


def test_the_levels_stay_between_the_quartiles_and_twice_the_extremes() -> None:
    levels = eta.LEVELS
    for _ in range(2000):
        levels = eta.adapted(levels, 15.0, SPAN)
    assert levels == eta.NARROWEST
    ratios = [0.5 + k / 20 for k in range(40)]
    low, high = eta.error_band(ratios, levels)
    assert low < 1 < high  # never a point while the errors vary
    for _ in range(2000):
        levels = eta.adapted(levels, 25.0, SPAN)
    assert levels == (eta.NARROWEST[0], eta.WIDEST[1])
    for _ in range(5000):
        levels = eta.adapted(levels, 5.0, SPAN)
    assert levels == (eta.WIDEST[0], eta.NARROWEST[1])


@given(st.integers(0, 2**32), st.floats(0.2, 1.5), st.sampled_from(["walk", "jump", "wave"]))
@properties(max_examples=12)
def test_each_end_misses_its_share_of_starts_however_the_errors_drift(seed: int, spread: float, drift: str) -> None:
    """Errors log-normal about a centre that drifts (a random walk, a jump to four times, a slow wave): ranges
    read from the latest OUTCOMES_KEPT errors at the adapted levels miss SIDE_MISS on each side, to within the
    bound adaptive conformal inference gives ((level travelled + GAMMA) / (GAMMA × T)), and 1 − LIKELY of them
    together to within a point (a fixed 10th and 90th percentile misses up to 24.5 % of these)."""
    rng = random.Random(seed)
    steps, centre, seen = 3000, 0.0, [1.0] * eta.RECORD_MIN
    levels = eta.LEVELS
    early = late = 0
    for t in range(steps):
        if drift == "walk":
            centre += rng.gauss(0.0, 0.05)
        elif drift == "jump":
            centre = math.log(4.0) if t >= steps // 2 else 0.0
        else:
            centre = math.sin(t / 300)
        ratio = math.exp(centre + rng.gauss(0.0, spread))
        span = eta.error_band(seen[-200:], levels)
        early += ratio < span[0]
        late += ratio > span[1]
        levels = eta.adapted(levels, ratio, span)
        seen.append(ratio)
    # (more starts inside only where an end stays at its quartile: the errors vary less than the quartiles say)
    slack = (eta.WIDEST[1] - eta.NARROWEST[1] + eta.GAMMA) / (eta.GAMMA * steps)
    assert early / steps <= eta.SIDE_MISS + slack
    assert late / steps <= eta.SIDE_MISS + slack
    assert (early + late) / steps <= 1 - eta.LIKELY + 0.01


def snapshot(at_h: float, waiting: tuple[str, ...] = (), running: dict[str, float] | None = None) -> Snapshot:
    at = T0 + at_h * H
    return cluster({P5: 2}).model_copy(update={"taken_at": at, "pending_workloads": tuple(
        PendingWorkload(name=n, team="a", pool=P5, accelerators=8, pods=1, created=T0) for n in waiting),
        "running_workloads": tuple(RunningWorkload(name=n, team="a", pool=P5, accelerators=8, pods=1,
                                                started=T0 + s * H) for n, s in (running or {}).items())})


def told(name: str, earliest_h: float, latest_h: float | None) -> WorkloadEta:
    return WorkloadEta(name=name, team="a", pool=P5, start=T0 + earliest_h * H, earliest=T0 + earliest_h * H,
                       latest=None if latest_h is None else T0 + latest_h * H)


def test_the_plan_step_records_whether_each_start_fell_in_the_range_it_was_told_and_moves_the_levels() -> None:
    now = snapshot(0, ("in", "late", "early", "open"))
    ranges = [told("in", 2, 4), told("late", 2, 3), told("early", 3, 5), told("open", 2, None)]
    h1 = eta.told_after(eta.history_after(RunHistory(), now), ranges, now)
    assert (h1.told[f"a/late@{P5}"].earliest, h1.told[f"a/late@{P5}"].latest) == (T0 + 2 * H, T0 + 3 * H)
    assert h1.levels is None
    h2 = eta.history_after(h1, snapshot(6, running={"in": 3, "late": 4, "early": 2, "open": 6}))
    # in the order told (by key, all queued at once): early, in, late, open
    assert [o.in_range for o in h2.outcomes] == [False, True, False, True]
    expected = eta.LEVELS
    def at(h: float) -> float:
        return (T0 + h * H).timestamp()

    for start, (earliest, latest) in ((2, (3, 5)), (3, (2, 4)), (4, (2, 3)), (6, (2, None))):
        expected = eta.adapted(expected, at(start), (at(earliest), None if latest is None else at(latest)))
    assert h2.levels == expected


def test_a_history_stored_before_ranges_were_kept_loads_and_measures_nothing_of_them() -> None:
    stored = ('{"told": {"a/w@' + P5 + '": {"queued": "2026-11-30T10:00:00Z", "start": "2026-11-30T11:00:00Z"}},'
              ' "outcomes": [{"waited_s": 7200.0, "estimated_s": 3600.0}]}')
    old = RunHistory.model_validate_json(stored)
    assert old.levels is None
    assert old.outcomes == (Outcome(waited_s=7200.0, estimated_s=3600.0),)
    assert old.told[f"a/w@{P5}"] == Told(queued=T0.replace(hour=10, minute=0), start=T0.replace(hour=11, minute=0))
    later = eta.history_after(old, cluster({P5: 2}).model_copy(update={
        "taken_at": T0.replace(hour=14, minute=0), "running_workloads": (RunningWorkload(
            name="w", team="a", pool=P5, accelerators=8, pods=1, started=T0.replace(hour=13, minute=0)),)}))
    assert later.outcomes[-1] == Outcome(waited_s=3 * 3600.0, estimated_s=3600.0, in_range=None)
    assert later.levels is None
