"""Every figure the tools draw, rendered and checked on its own matplotlib objects (support.figures): data in every
panel, every series labelled and in the legend, the legend outside the panels, one shared x axis, coinciding
series all visible and said to coincide. The checker itself is shown to catch each fault."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from matplotlib import dates as mdates
from matplotlib.figure import Figure
from support.figures import panels, problems
from support.props import properties

from rebalancer.budgets.metering import Fact
from rebalancer.domain.policy import Policy
from rebalancer_tools.backtest import synthetic as syn
from rebalancer_tools.backtest.replay import Replay, prepare
from rebalancer_tools.backtest.report import team_figure
from rebalancer_tools.demo.report import Stage, quotas_figure
from rebalancer_tools.reports import figures
from rebalancer_tools.reports.usage_report import usage_figure
from rebalancer_tools.simulator.metrics import StrategyResult
from rebalancer_tools.simulator.report import teams_figure, utilization_figure
from rebalancer_tools.simulator.results import Timeline

T0 = datetime(2026, 12, 2, 17, 0, tzinfo=UTC)
P5, G5, TRN1 = "ml.p5.48xlarge", "ml.g5.12xlarge", "ml.trn1.32xlarge"


# --- the checker catches what it is for ----------------------------------------------------------------------------
def _plain() -> tuple[Figure, Any]:
    fig, [ax] = figures.new_figure(1)
    ax.plot([0, 1, 2], [1, 2, 3], label="a")
    return fig, ax


def test_the_checker_catches_a_legend_over_the_data() -> None:
    fig, ax = _plain()
    ax.legend(loc="upper left")
    assert any("covers a panel" in p for p in problems(fig))


def test_the_checker_catches_an_unlabelled_series_and_an_empty_panel() -> None:
    fig, axes = figures.new_figure(2)
    axes[0].plot([0, 1], [0, 1])
    figures.legend_outside(fig, axes)
    found = problems(fig)
    assert any("has no label" in p for p in found)
    assert "panel 1 is empty" in found


def test_the_checker_catches_a_series_hidden_under_its_twin_and_panels_on_two_axes() -> None:
    fig, ax = _plain()
    ax.plot([0, 1, 2], [1, 2, 3], label="b")
    figures.legend_outside(fig, [ax])
    found = problems(fig)
    assert "panel 0: 'b' hides 'a' (same data, same style)" in found
    assert "panel 0: 'b' coincides with 'a' and does not say so" in found
    separate = Figure()
    left, right = separate.subplots(1, 2)
    left.plot([0, 1], [0, 1], label="x")
    right.plot([5, 6], [0, 1], label="y")
    figures.legend_outside(separate, [left, right])
    assert "panel 1 does not share the first panel's x axis" in problems(separate)


# --- the demo's quotas.png ---------------------------------------------------------------------------------------
def demo_story() -> tuple[list[Stage], dict[str, list[tuple[datetime, float]]], datetime]:
    start = {"research": {P5: 12, TRN1: 8}, "training": {P5: 12, TRN1: 16}, "data-science": {P5: 8, G5: 4},
             "inference": {G5: 8}}
    failed = {**start, "research": {P5: 8, TRN1: 8}, "training": {P5: 8, TRN1: 16}}
    moved = {**failed, "data-science": {P5: 4}, "research": {P5: 12, TRN1: 8}}
    capacity = {P5: 32, G5: 12, TRN1: 32}
    story = [Stage(T0, start, capacity), Stage(T0 + timedelta(minutes=1), failed, {**capacity, P5: 24}),
             Stage(T0 + timedelta(hours=3), moved, {**capacity, P5: 24})]
    utilization = {team: [(T0 - timedelta(hours=2) + timedelta(minutes=15 * i), 80.0 - i) for i in range(20)]
                   for team in ("research", "training", "inference")}
    return story, utilization, T0 + timedelta(hours=5)


def test_the_demo_figure_reads_at_a_glance_with_quotas_over_time() -> None:
    story, utilization, end = demo_story()
    fig = quotas_figure(story, utilization, end)
    assert problems(fig) == []
    axes = panels(fig)
    assert len(axes) == 4  # three instance types and the utilization, nothing empty
    low, high = axes[0].get_xlim()
    # One time axis: the quotas are drawn from the first utilization reading to the end, in dates (not "after N").
    assert low <= mdates.date2num(T0 - timedelta(hours=2))
    assert high >= mdates.date2num(end)
    assert not [t.get_text() for t in axes[-1].get_xticklabels() if "after" in t.get_text()]
    assert {"research", "training", "data-science", "inference", "healthy capacity"} <= {
        t.get_text() for t in fig.legends[0].get_texts()}


def test_the_demo_utilization_reaches_the_story_end_one_row_per_team_and_the_scenarios_are_marked() -> None:
    story, utilization, end = demo_story()
    story = [story[0], *(Stage(s.at, s.quotas, s.capacity, str(i)) for i, s in enumerate(story[1:], 1))]
    utilization = {team: [(T0 - timedelta(hours=2) + timedelta(minutes=15 * i), 80.0) for i in range(28)]
                   for team in ("research", "training", "inference")}
    utilization["training"] = [(at, 0.0) for at, _ in utilization["training"]]  # idle all along, as busy rows are
    fig = quotas_figure(story, utilization, end)
    assert problems(fig) == []
    strip = panels(fig)[-1]
    [mesh] = strip.collections
    shade = mesh.get_array()
    assert shade.shape == (3, 28)  # a row per team: an idle team at 0 hides no busy one, as lines at 0 would
    assert sorted(t.get_text() for t in strip.get_yticklabels()) == ["inference", "research", "training"]
    rows = {t.get_text(): k for k, t in enumerate(strip.get_yticklabels())}
    assert set(shade[rows["training"]]) == {0.0}
    assert set(shade[rows["research"]]) == {80.0}
    last = max(at for series in utilization.values() for at, _ in series)
    cells = mesh.get_coordinates()[0, :, 0]
    assert cells[-1] >= mdates.date2num(last)
    assert strip.get_xlim()[1] >= mdates.date2num(end)
    markers = [line for line in panels(fig)[0].lines if line.get_label().startswith("a scenario ends")]
    assert [line.get_xdata()[0] for line in markers] == [mdates.date2num(s.at) for s in story[1:]]
    assert {t.get_text() for t in panels(fig)[0].texts} == {"1", "2"}


def test_a_type_nobody_holds_and_missing_utilization_draw_no_panel() -> None:
    story, _, end = demo_story()
    story = [Stage(s.at, {t: {p: n for p, n in pools.items() if p != G5} for t, pools in s.quotas.items()},
                   {p: n for p, n in s.capacity.items() if p != G5}) for s in story]
    fig = quotas_figure(story, {}, end)
    assert problems(fig) == []
    assert len(panels(fig)) == 2


# --- the backtest's per-team timelines ----------------------------------------------------------------------------
def replay_of(name: str, times: list[datetime], quota: list[float]) -> Replay:
    return Replay(name=name, times=times, quota={"a": quota}, pool_quota={"a": [{P5: q} for q in quota]})


@properties(10)
@given(st.lists(st.sampled_from([0, 1, 2]), min_size=1, max_size=4), st.integers(0, 2**16))
def test_policies_that_give_a_team_the_same_quota_are_all_drawn_and_said_to_coincide(shape: list[int],
                                                                                     seed: int) -> None:
    """Each policy's quota is one of three series; several policies may share one: all are visible."""
    h = syn.history(lambda _t, at: (float(at.hour % 4), 1.0), {"a": 4}, nodes=1, days=0.25, step_minutes=30)
    states = prepare(h.states())
    times = [s.at for s in states]
    options = [[float((i * (k + seed)) % 5) for i in range(len(times))] for k in range(3)]
    replays = [replay_of(f"p{i}", times, options[k]) for i, k in enumerate(shape)]
    fig = team_figure("a", states, replays)
    assert problems(fig) == []
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    drawn = [("in use", [s.use["a"][P5][1] for s in states]), *((r.name, r.quota["a"]) for r in replays)]
    for i, (name, values) in enumerate(drawn[1:], 1):
        twin = next((n for n, v in drawn[:i] if v == values), None)
        assert (f"quota: {name} (same as {twin})" if twin else f"quota: {name}") in labels


def test_a_team_on_two_types_gets_a_panel_per_type_and_the_newest_state_is_as_wide_as_the_others() -> None:
    """8 H100 and 16 Trainium are not 24 of anything: each pool its own panel, in its own unit."""
    h = syn.history(lambda _t, at: (float(at.hour % 4), 1.0), {"a": 4}, nodes=1, days=0.25, step_minutes=30)
    states = prepare(h.states())
    times = [s.at for s in states]
    replay = Replay(name="p", times=times, quota={"a": [24.0] * len(times)},
                    pool_quota={"a": [{P5: 8.0, TRN1: 16.0}] * len(times)})
    fig = team_figure("a", states, [replay])
    assert problems(fig) == []
    axes = panels(fig)
    assert [ax.get_ylabel().split("\n")[0] for ax in axes] == ["p5.48xlarge", "trn1.32xlarge"]
    quotas = {ax.get_ylabel().split("\n")[0]: {float(y) for line in ax.lines if "quota" in line.get_label()
                                               for y in line.get_ydata()} for ax in axes}
    assert quotas == {"p5.48xlarge": {8.0}, "trn1.32xlarge": {16.0}}
    step = states[-1].hours
    assert axes[0].get_xlim()[1] >= mdates.date2num(times[-1] + timedelta(hours=step))
    one = team_figure("a", states, [replay_of("p", times, [4.0] * len(times))])
    assert len(panels(one)) == 1


# --- usage --plot -------------------------------------------------------------------------------------------------
def test_the_usage_figure_and_nothing_to_draw() -> None:
    policy = Policy.model_validate({"teams": {"research": {"budget": {"accelerator_hours": 100}}, "guest": {}}})
    facts = [Fact(start=T0 + timedelta(hours=i), end=T0 + timedelta(hours=i + 1),
                  at_start={"research": {P5: (8.0, 0.0)}, "guest": {P5: (2.0, 2.0)}},
                  at_end={"research": {P5: (8.0, 0.0)}, "guest": {P5: (2.0, 2.0)}}) for i in range(6)]
    fig = usage_figure(facts, policy, T0 + timedelta(hours=6), None)
    assert fig is not None
    assert problems(fig) == []
    assert usage_figure([], policy, T0 + timedelta(hours=6), None) is None


# --- simulate --report ------------------------------------------------------------------------------------------
def strategy(name: str, busy: list[int], quota: list[int]) -> StrategyResult:
    n = len(busy)
    timeline = Timeline(times_s=[3600.0 * i for i in range(n)], busy=busy, capacity=[16] * n,
                        quota={"a": quota, "b": [16 - q for q in quota], "idle": [0] * n},
                        usage={"a": busy, "b": [0] * n, "idle": [0] * n},
                        demand={"a": [q + 1 for q in quota], "b": [2] * n, "idle": [0] * n})
    return StrategyResult(name=name, utilization=1, wait_p50_s=0, wait_p95_s=0, wait_mean_s=0, preemptions=0,
                          lost_gpu_hours=0, entitlement_deficit_gpu_hours=0, jain_index=1, quota_changes=0,
                          jobs_completed=0, jobs_unfinished=0, failure_kills=0, failure_lost_gpu_hours=0,
                          makespan_s=0, timeline=timeline)


@pytest.mark.parametrize("same", [False, True])
def test_the_simulation_figures(same: bool) -> None:
    results = {"static": strategy("static", [4, 8, 8, 4], [8, 8, 8, 8]),
               "builtin": strategy("builtin", [4, 8, 8, 4] if same else [6, 10, 9, 5], [8, 8, 8, 8]),
               "rebalancer": strategy("rebalancer", [6, 12, 12, 6], [6, 12, 12, 6])}
    util = utilization_figure(results)
    assert util is not None
    assert problems(util) == []
    assert ("builtin (same as static)" in {t.get_text() for t in util.legends[0].get_texts()}) == same
    teams = teams_figure(results["rebalancer"])
    assert teams is not None
    assert problems(teams) == []
    assert len(panels(teams)) == 2  # the team without demand has no panel
    assert {ax.get_ylabel() for ax in panels(teams)} == {"GPUs"}


def test_the_subject_of_a_team_panel_is_not_squashed_under_its_demand() -> None:
    """Demand 100 × the quota: the panel is scaled to the quota and what ran, and says where demand peaks."""
    r = strategy("rebalancer", [4, 8, 8, 4], [8, 8, 8, 8])
    assert r.timeline is not None
    r.timeline.demand["a"] = [800, 800, 20, 10]
    fig = teams_figure(r)
    assert fig is not None
    assert problems(fig) == []
    panel = panels(fig)[0]
    assert panel.get_ylim()[1] <= 8 * 1.5
    assert any("800" in t.get_text() for t in panel.texts)


def test_opaque_team_ids_get_letters_and_each_panel_names_its_pool_and_unit() -> None:
    r = strategy("rebalancer", [4, 8, 8, 4], [8, 8, 8, 8])
    assert r.timeline is not None
    tl = r.timeline
    for old, new in (("a", "b436b2"), ("b", "6c71a0")):
        for series in (tl.quota, tl.usage, tl.demand):
            series[new] = series.pop(old)
    tl.pool_busy = {P5: [0] * 4, TRN1: [0] * 4}
    tl.pools_of = {"b436b2": [P5], "6c71a0": [TRN1]}
    fig = teams_figure(r)
    assert fig is not None
    assert problems(fig) == []
    assert {(ax.get_title(loc="left"), ax.get_ylabel()) for ax in panels(fig)} == {
        (f"team A (b436b2) · {P5}", "GPUs"), (f"team B (6c71a0) · {TRN1}", "Trainium chips")}
