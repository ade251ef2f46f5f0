"""The demo's report: a Markdown file with every scenario's checks, quotas before → after, what the admin received,
and a PNG plot of the quotas per instance type through the story and the teams' utilization (matplotlib, Agg)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rebalancer.adapters.cloudwatch import METRICS, NAMESPACE
from rebalancer.domain.names import TEAM_NAMESPACE_PREFIX
from rebalancer_tools.demo.scenarios import Quotas, ScenarioResult
from rebalancer_tools.local.cast import EKS_CLUSTER, TEAMS

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure


def read_utilization(cloudwatch: Any, end: datetime, hours: float = 12) -> dict[str, list[tuple[datetime, float]]]:
    """team → (time, GPU utilization %) read back from the emulator's CloudWatch, 15-minute averages."""
    queries = [{"Id": f"t{i}", "Label": team, "ReturnData": True, "MetricStat": {
        "Metric": {"Namespace": NAMESPACE, "MetricName": METRICS["gpu_percent"], "Dimensions": [
            {"Name": "ClusterName", "Value": EKS_CLUSTER},
            {"Name": "Namespace", "Value": TEAM_NAMESPACE_PREFIX + team}]},
        "Period": 900, "Stat": "Average"}} for i, team in enumerate(TEAMS)]
    got = cloudwatch.get_metric_data(MetricDataQueries=queries, StartTime=end - timedelta(hours=hours),
                                     EndTime=end + timedelta(minutes=1))
    out: dict[str, list[tuple[datetime, float]]] = {}
    for r in got.get("MetricDataResults", []):
        points = sorted(zip(r.get("Timestamps", []), r.get("Values", []), strict=False))
        out[str(r.get("Label"))] = [(t, float(v)) for t, v in points]
    return out


def _quota_md(before: Quotas, after: Quotas, capacity: dict[str, int]) -> list[str]:
    types = sorted({t for q in (before, after) for pools in q.values() for t in pools} | set(capacity))
    lines = ["| team | " + " | ".join(types) + " |", "|---|" + "---:|" * len(types)]
    for team in sorted(set(before) | set(after)):
        cells = []
        for t in types:
            b, a = before.get(team, {}).get(t, 0), after.get(team, {}).get(t, 0)
            cells.append(f"{b} → **{a}**" if a != b else str(a))
        lines.append(f"| {team} | " + " | ".join(cells) + " |")
    lines.append("| *healthy capacity* | " + " | ".join(str(capacity.get(t, 0)) for t in types) + " |")
    return lines


@dataclass(frozen=True, slots=True)
class Stage:
    """The quotas (and healthy capacity) from `at` on; `event`: what began the stage, as the report numbers it."""

    at: datetime
    quotas: Quotas
    capacity: dict[str, int]
    event: str = ""


def stages(start: Stage, results: Sequence[ScenarioResult]) -> list[Stage]:
    """The quotas through the story: the start, then each scenario's end state at the time it ended, marked with
    the scenario's number in the report (a scenario that broke before reading its end state is left out, not drawn
    as quotas of zero)."""
    return [start, *(Stage(r.at, r.after, r.capacity, str(i)) for i, r in enumerate(results, 1)
                     if r.at is not None and r.after)]


UTILIZATION_STEP = timedelta(minutes=15)  # read_utilization's period


def quotas_figure(story: Sequence[Stage], utilization: dict[str, list[tuple[datetime, float]]],
                  end: datetime) -> Figure:
    """One panel per instance type: each team's quota stacked over time, and the healthy capacity; below, the
    teams' GPU utilization on the same time axis, one row per team shaded by its percentage (rows never hide one
    another, as lines at the same level would); a dotted line across every panel where a scenario ended, numbered
    as in the report. Only types that had quota or capacity, and the utilization panel only when some was read:
    no empty panel."""
    from rebalancer_tools.reports import figures

    types = sorted({t for s in story for pools in s.quotas.values() for t, n in pools.items() if n}
                   | {t for s in story for t, n in s.capacity.items() if n})
    teams = sorted({team for s in story for team in s.quotas})
    used = [team for team in teams if utilization.get(team)]
    fig, axes = figures.new_figure(len(types) + (1 if used else 0), width=11, row_height=2.4,
                                   height_ratios=[1.0] * len(types) + ([0.25 + 0.12 * len(used)] if used else []))
    colours = {team: f"C{k}" for k, team in enumerate(teams)}
    # Each stage holds until the next one starts; the quotas the cluster started with held before the story too,
    # so they are drawn from the first utilization reading on, not from nothing.
    first = min([story[0].at, *(p[0] for team in used for p in utilization[team][:1])])
    last = max([end, story[-1].at, *(p[0] + UTILIZATION_STEP for team in used for p in utilization[team][-1:])])
    edges: Any = [first, *(s.at for s in story[1:]), last]
    for ax, t in zip(axes, types, strict=False):
        _quota_panel(ax, story, edges, t, colours)
    if used:
        _utilization_panel(fig, axes[-1], {team: utilization[team] for team in used}, last)
    _scenario_marks(axes, story)
    axes[0].set_title("quotas per team over time (stacked) against healthy capacity", loc="left", fontsize=10)
    figures.time_axis(axes[-1])
    figures.legend_outside(fig, axes, last=("healthy capacity", "a scenario ends (its number)"))
    return fig


def _quota_panel(ax: Axes, story: Sequence[Stage], edges: Any, t: str, colours: dict[str, str]) -> None:
    """Instance type t's panel: each team's quota stacked (in `colours`' order) and the healthy capacity dashed."""
    bottom = [0.0] * len(story)
    for team, colour in colours.items():
        values = [float(s.quotas.get(team, {}).get(t, 0)) for s in story]
        if not any(values):
            continue  # a team that never held this type is not drawn in its panel
        top = [b + v for b, v in zip(bottom, values, strict=True)]
        ax.fill_between(edges, [*bottom, bottom[-1]], [*top, top[-1]], step="post", color=colour,
                        alpha=0.85, linewidth=0, label=team)
        bottom = top
    capacity = [float(s.capacity.get(t, story[0].capacity.get(t, 0))) for s in story]
    ax.step(edges, [*capacity, capacity[-1]], where="post", color="black", linestyle="--", linewidth=1.2,
            label="healthy capacity")
    ax.set_ylabel(f"{t.removeprefix('ml.')}\naccelerators", fontsize=8)
    ax.set_ylim(0, max(capacity) * 1.12)  # room above the capacity for the scenarios' numbers


def _utilization_panel(fig: Figure, ax: Axes, utilization: dict[str, list[tuple[datetime, float]]],
                       last: datetime) -> None:
    """The teams' GPU utilization up to `last`, one row per team (in `utilization`'s order) shaded by its
    percentage, with its colour key below."""
    import numpy as np
    from matplotlib import dates

    used = list(utilization)
    start = min(p[0] for team in used for p in utilization[team][:1])
    slots = -(-(last - start) // UTILIZATION_STEP)  # whole steps from the first reading to the end
    shade = np.full((len(used), slots), np.nan)
    for row, team in enumerate(used):
        for at, value in utilization[team]:
            shade[row, int((at - start) / UTILIZATION_STEP)] = value
    xs = dates.date2num(  # type: ignore[no-untyped-call]  # matplotlib's stubs lack it
        [start + k * UTILIZATION_STEP for k in range(slots + 1)])
    mesh = ax.pcolormesh(xs, np.arange(len(used) + 1), np.ma.masked_invalid(shade), cmap="Greens", vmin=0,
                         vmax=100, shading="flat", label="_keyed by its colorbar")
    ax.set_yticks(np.arange(len(used)) + 0.5, used, fontsize=8)
    ax.set_ylim(len(used), 0)
    ax.set_ylabel("GPU utilization\n(Container Insights)", fontsize=8)
    ax.set_facecolor("0.8")
    key = fig.colorbar(mesh, ax=ax, location="bottom", aspect=60, shrink=0.5, pad=0.02)
    key.set_label("GPU utilization % (white: idle; grey: not reported)", fontsize=8)
    key.ax.tick_params(labelsize=8)


def _scenario_marks(axes: Sequence[Axes], story: Sequence[Stage]) -> None:
    """A dotted line across every panel where a scenario ended, numbered on the top panel; scenarios that ended
    within a minute of each other share one mark."""
    from matplotlib import dates

    marks: dict[datetime, list[str]] = {}
    for s in story[1:]:
        near = next((at for at in marks if abs(at - s.at) < timedelta(minutes=1)), s.at)
        marks.setdefault(near, []).append(s.event)
    for at, events in marks.items():
        x = dates.date2num(at)  # type: ignore[no-untyped-call]  # matplotlib's stubs lack it
        for ax in axes:
            ax.axvline(x, color="0.3", linestyle=":", linewidth=1.0, label="a scenario ends (its number)")
        axes[0].annotate(", ".join(events), (x, 1.0), xycoords=("data", "axes fraction"),
                         xytext=(0, -2), textcoords="offset points", ha="center", va="top", fontsize=8)


def write_report(results: Sequence[ScenarioResult], start: Stage,
                 utilization: dict[str, list[tuple[datetime, float]]], out_dir: Path, seconds: float,
                 end: datetime) -> Path:
    from rebalancer_tools.reports import figures

    out_dir.mkdir(parents=True, exist_ok=True)
    png = out_dir / "quotas.png"
    figures.save(quotas_figure(stages(start, results), utilization, end), png, dpi=110)
    ok = all(r.ok for r in results)
    lines = ["# hyperpod-rebalancer demo", "",
             f"**{'Every scenario ended as expected' if ok else 'Some scenarios did NOT end as expected'}** "
             f"({sum(r.ok for r in results)}/{len(results)}, {seconds:.0f} s). Checked against the emulator's "
             "state, read back over its API.", "", f"![quotas and utilization]({png.name})", ""]
    for i, r in enumerate(results, 1):
        lines += [f"## {i}. {r.title} — {'passed' if r.ok else 'FAILED'}", ""]
        if r.execution:
            lines += [f"Execution `{r.execution}`: {' → '.join(r.states)}", ""]
        lines += [f"- {'✓' if c.ok else '✗'} {c.what}" + (f" ({c.detail})" if c.detail else "") for c in r.checks]
        lines += ["", "Quotas (accelerators), before → after:", "", *_quota_md(r.before, r.after, r.capacity), ""]
        for name in ("email", "slack", "history", "rollback", "backtest"):
            if name in r.outputs:
                lines += [f"<details><summary>{name}</summary>", "", "```", r.outputs[name].rstrip(), "```", "",
                          "</details>", ""]
    path = out_dir / "demo-report.md"
    path.write_text("\n".join(lines) + "\n")
    return path
