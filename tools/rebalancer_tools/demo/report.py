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
    from matplotlib.figure import Figure


def read_utilization(cloudwatch: Any, end: datetime, hours: int = 12) -> dict[str, list[tuple[datetime, float]]]:
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
    """The quotas (and healthy capacity) from `at` on."""

    at: datetime
    quotas: Quotas
    capacity: dict[str, int]


def stages(start: Stage, results: Sequence[ScenarioResult]) -> list[Stage]:
    """The quotas through the story: the start, then each scenario's end state at the time it ended (a scenario
    that broke before reading its end state is left out, not drawn as quotas of zero)."""
    return [start, *(Stage(r.at, r.after, r.capacity) for r in results if r.at is not None and r.after)]


def quotas_figure(story: Sequence[Stage], utilization: dict[str, list[tuple[datetime, float]]],
                  end: datetime) -> Figure:
    """One panel per instance type: each team's quota stacked over time, and the healthy capacity; below, the
    teams' GPU utilization on the same time axis. Only types that had quota or capacity, and the utilization panel
    only when some was read: no empty panel."""
    from rebalancer_tools.reports import figures

    types = sorted({t for s in story for pools in s.quotas.values() for t, n in pools.items() if n}
                   | {t for s in story for t, n in s.capacity.items() if n})
    teams = sorted({team for s in story for team in s.quotas})
    used = [team for team in teams if utilization.get(team)]
    fig, axes = figures.new_figure(len(types) + (1 if used else 0), width=11, row_height=2.4)
    colours = {team: f"C{k}" for k, team in enumerate(teams)}
    # Each stage holds until the next one starts; the quotas the cluster started with held before the story too,
    # so they are drawn from the first utilization reading on, not from nothing.
    first = min([story[0].at, *(p[0] for team in used for p in utilization[team][:1])])
    edges: Any = [first, *(s.at for s in story[1:]), max(end, story[-1].at)]
    for ax, t in zip(axes, types, strict=False):
        bottom = [0.0] * len(story)
        for team in teams:
            values = [float(s.quotas.get(team, {}).get(t, 0)) for s in story]
            if not any(values):
                continue  # a team that never held this type is not drawn in its panel
            top = [b + v for b, v in zip(bottom, values, strict=True)]
            ax.fill_between(edges, [*bottom, bottom[-1]], [*top, top[-1]], step="post", color=colours[team],
                            alpha=0.85, linewidth=0, label=team)
            bottom = top
        capacity = [float(s.capacity.get(t, story[0].capacity.get(t, 0))) for s in story]
        ax.step(edges, [*capacity, capacity[-1]], where="post", color="black", linestyle="--", linewidth=1.2,
                label="healthy capacity")
        ax.set_ylabel(f"{t.removeprefix('ml.')}\naccelerators", fontsize=8)
        ax.set_ylim(bottom=0)
    if used:
        ax = axes[-1]

        def line(axes: Any, team: str, xs: Any, ys: Sequence[float], **style: Any) -> None:
            axes.plot(xs, ys, color=colours[team], **style)

        figures.draw_distinct(ax, [(team, [p[0] for p in utilization[team]], [p[1] for p in utilization[team]])
                                   for team in used], line, lambda team: team)
        ax.set_ylabel("GPU utilization %\n(Container Insights)", fontsize=8)
        ax.set_ylim(-5, 105)
    axes[0].set_title("quotas per team over time (stacked) against healthy capacity", loc="left", fontsize=10)
    figures.time_axis(axes[-1])
    figures.legend_outside(fig, axes, last=("healthy capacity",))
    return fig


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
