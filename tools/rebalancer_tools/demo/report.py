"""The demo's report: a Markdown file with every scenario's checks, quotas before → after, what the admin received,
and a PNG plot of the quotas per instance type through the story and the teams' utilization (matplotlib, Agg)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from rebalancer.adapters.cloudwatch import METRICS, NAMESPACE
from rebalancer.domain.names import TEAM_NAMESPACE_PREFIX
from rebalancer_tools.demo.cast import EKS_CLUSTER, TEAMS
from rebalancer_tools.demo.scenarios import Quotas, ScenarioResult


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


def plot(results: Sequence[ScenarioResult], initial: Quotas, utilization: dict[str, list[tuple[datetime, float]]],
         out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    stages: list[tuple[str, Quotas, dict[str, int]]] = [("start", initial, {})]
    stages += [(f"after {i + 1}", r.after, r.capacity) for i, r in enumerate(results)]
    types = sorted({t for _, q, _c in stages for pools in q.values() for t in pools})
    teams = sorted({team for _, q, _c in stages for team in q})
    fig, axes = plt.subplots(2, len(types), figsize=(4.2 * len(types), 7.5), squeeze=False)
    colours = plt.get_cmap("tab10")
    for col, t in enumerate(types):
        ax = axes[0][col]
        bottoms = [0] * len(stages)
        for k, team in enumerate(teams):
            values = [q.get(team, {}).get(t, 0) for _, q, _c in stages]
            ax.bar(range(len(stages)), values, bottom=bottoms, color=colours(k), label=team)
            bottoms = [b + v for b, v in zip(bottoms, values, strict=True)]
        caps = [c.get(t) for _, _q, c in stages]
        ax.step(range(len(stages)), [c if c is not None else float("nan") for c in caps], where="mid",
                color="black", linestyle="--", label="healthy capacity")
        ax.set_xticks(range(len(stages)), [s for s, _q, _c in stages], rotation=30, fontsize=8)
        ax.set_title(f"{t} quotas (accelerators)", fontsize=10)
    axes[0][0].legend(fontsize=7, loc="lower left")
    ax = axes[1][0]
    for k, team in enumerate(teams):
        points = utilization.get(team, [])
        if points:
            ax.plot([p[0] for p in points], [p[1] for p in points], color=colours(k), label=team)
    ax.set_title("GPU utilization % (Container Insights)", fontsize=10)
    ax.set_ylim(-5, 105)
    ax.tick_params(axis="x", labelsize=7, rotation=30)
    for extra in axes[1][1:]:
        extra.axis("off")
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)


def write_report(results: Sequence[ScenarioResult], initial: Quotas,
                 utilization: dict[str, list[tuple[datetime, float]]], out_dir: Path, seconds: float) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    png = out_dir / "quotas.png"
    plot(results, initial, utilization, png)
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
