"""`--report DIR`: a Markdown summary and PNG plots of a simulation run."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rebalancer_tools.simulator.eta import share_text
from rebalancer_tools.simulator.labels import renamed
from rebalancer_tools.simulator.metrics import StrategyResult

if TYPE_CHECKING:
    from matplotlib.figure import Figure

HOUR = 3600.0
DAY = 86400.0

COLUMNS = (
    ("strategy", "strategy"), ("utilization", "util"), ("wait_p50_s", "wait p50 h"), ("wait_p95_s", "wait p95 h"),
    ("wait_mean_s", "wait mean h"), ("preemptions", "preempt"), ("lost_gpu_hours", "lost GPU-h"),
    ("entitlement_deficit_gpu_hours", "deficit GPU-h"), ("jain_index", "Jain"), ("quota_changes", "quota chg"),
    ("jobs_completed", "done"),
)


def cells(r: StrategyResult) -> list[str]:
    """One row of the results table, in the units people read (hours, percent)."""
    return [r.name, f"{r.utilization:.1%}", f"{r.wait_p50_s / HOUR:.2f}", f"{r.wait_p95_s / HOUR:.1f}",
            f"{r.wait_mean_s / HOUR:.1f}", str(r.preemptions), f"{r.lost_gpu_hours:,.0f}",
            f"{r.entitlement_deficit_gpu_hours:,.0f}", f"{r.jain_index:.3f}", str(r.quota_changes),
            str(r.jobs_completed)]


def markdown_table(results: Mapping[str, StrategyResult]) -> str:
    head = [c[1] for c in COLUMNS]
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    lines += ["| " + " | ".join(cells(r)) + " |" for r in results.values()]
    return "\n".join(lines)


def utilization_figure(results: Mapping[str, StrategyResult]) -> Figure | None:
    """GPUs busy ÷ healthy over the trace's days, one line per strategy (None: no strategy has a timeline).
    Strategies whose lines coincide are all drawn and the legend says so."""
    from rebalancer_tools.reports import figures

    timed = [r for r in results.values() if r.timeline and r.timeline.times_s]
    if not timed:
        return None
    fig, [ax] = figures.new_figure(1, width=10, row_height=4)
    series = [(r.name, [t / DAY for t in r.timeline.times_s],
               [b / c if c else 0 for b, c in zip(r.timeline.busy, r.timeline.capacity, strict=True)])
              for r in timed if r.timeline is not None]

    def line(axes: Any, _name: str, xs: Any, ys: Sequence[float], **style: Any) -> None:
        axes.plot(xs, ys, **style)

    figures.draw_distinct(ax, series, line, lambda name: name)
    ax.set_xlabel("day")
    ax.set_ylabel("accelerators busy ÷ healthy")
    ax.set_title("Utilization over time", loc="left")
    figures.legend_outside(fig, [ax])
    return fig


HASHED = re.compile(r"[0-9a-f]{6,}")  # an opaque id (Philly's virtual clusters), not a name a reader can keep


def figure_labels(teams: Sequence[str]) -> dict[str, str]:
    """team → how a figure names it: the team's own name, or where every name is an opaque id, `team A`, `team B`…
    in the order given, with the id beside it (the report's tables use the ids)."""
    if not teams or not all(HASHED.fullmatch(t) for t in teams):
        return {t: t for t in teams}
    return {t: f"team {_letters(k)} ({t})" for k, t in enumerate(teams)}


def _letters(k: int) -> str:
    return chr(ord("A") + k) if k < 26 else _letters(k // 26 - 1) + chr(ord("A") + k % 26)


def unit_of(pools: Sequence[str]) -> str:
    """What a team's accelerators are called on a figure's axis: GPUs, Trainium chips, or accelerators if mixed."""
    from rebalancer.catalog.specs import known_types, spec

    kinds = {(spec(p).accelerator_kind or "") if p in known_types() else "nvidia-gpu" for p in pools}
    if kinds <= {"nvidia-gpu"}:
        return "GPUs"
    if len(kinds) == 1 and next(iter(kinds)).startswith("trainium"):
        return "Trainium chips"
    return "accelerators"


def teams_figure(reb: StrategyResult, most: int = 8) -> Figure | None:
    """The rebalancer's quota, running accelerators and demand of the `most` teams with the most demand, one panel
    each on one day axis (None: no timeline, or no team had demand). The subject is the quota and what ran: each
    panel is scaled to them, and demand above that is cut at the panel's top with its peak written there; what ran
    is a filled area under the quota's line, so neither hides the other. Each panel says its team's pool and unit
    when the cluster has several pools."""
    from rebalancer_tools.reports import figures

    tl = reb.timeline
    if not tl or not tl.times_s:
        return None
    days: Any = [t / DAY for t in tl.times_s]
    teams = sorted(tl.quota, key=lambda t: -sum(tl.demand[t]))
    shown = [t for t in teams if sum(tl.demand[t]) > 0][:most]
    if not shown:
        return None
    fig, axes = figures.new_figure(len(shown), width=10, row_height=2.0)
    names = figure_labels(shown)
    several = len(tl.pool_busy) > 1
    for ax, team in zip(axes, shown, strict=True):
        demand, running, quota = tl.demand[team], tl.usage[team], tl.quota[team]
        top = max(max(quota), max(running)) or max(demand)
        limit = top * 1.3
        peak = max(demand)
        ax.fill_between(days, demand, step="post", color="0.87", label="demand (running + waiting)")
        if peak > limit:
            at = days[demand.index(peak)]
            ax.annotate(f"demand peaks at {peak:,} ↑", (at, limit), xytext=(0, -2), textcoords="offset points",
                        ha="center", va="top", fontsize=7, color="0.3")
        ax.fill_between(days, running, step="post", color="tab:blue", alpha=0.55, linewidth=0, label="running")
        ax.step(days, quota, where="post", color="tab:red", linewidth=1.3, label="quota")
        ax.set_ylim(0, limit)
        pools = tl.pools_of.get(team, [])
        ax.set_ylabel(unit_of(pools), fontsize=8)
        where = f" · {', '.join(pools)}" if several and pools else ""
        ax.set_title(names[team] + where, loc="left", fontsize=9)
    fig.suptitle(f"rebalancer: quota, running and demand of the {len(shown)} teams with the most demand", x=0.01,
                 ha="left", fontsize=10)
    axes[-1].set_xlabel("day")
    figures.legend_outside(fig, axes)
    return fig


def _plots(results: Mapping[str, StrategyResult], out: Path) -> list[str]:
    from rebalancer_tools.reports import figures

    files = []
    for name, fig in (("utilization.png", utilization_figure(results)),
                      ("rebalancer-teams.png", teams_figure(results["rebalancer"]) if "rebalancer" in results
                       else None)):
        if fig is not None:
            figures.save(fig, out / name, dpi=110)
            files.append(name)
    return files


def labels_table(labels: Mapping[str, str]) -> list[str]:
    """The trace's team labels that were renamed, as Markdown lines (none when every label is a team name)."""
    changed = renamed(dict(labels))
    if not changed:
        return []
    return ["## Team labels of the trace", "",
            f"{len(changed)} of {len(labels)} labels are not valid HyperPod team names; they run as:", "",
            "| label | team |", "|---|---|", *[f"| `{a}` | `{b}` |" for a, b in changed.items()], ""]


def pool_tables(results: Mapping[str, StrategyResult]) -> list[str]:
    """One results table per pool, when the cluster has several."""
    first = next(iter(results.values()), None)
    if first is None or not first.pools:
        return []
    lines: list[str] = []
    for pool in first.pools:
        lines += [f"Pool `{pool}`:", "", markdown_table({n: r.pools[pool] for n, r in results.items()}), ""]
    return lines


def eta_table(results: Mapping[str, StrategyResult]) -> list[str]:
    """Per strategy, how good the estimated starts were (when the run measured them)."""
    rows = [(n, r.eta) for n, r in results.items() if r.eta is not None]
    if not rows:
        return []
    lines = ["Estimated starts (jobs that waited 1 h or more, each as estimated at the first controller run after it "
             "arrived):", "",
             "| strategy | jobs | within 2× | within the likely range | too early | too late | no estimate | "
             "median abs. error h |", "|---|---|---|---|---|---|---|---|"]
    for name, e in rows:
        error = "—" if e.median_abs_error_h is None else f"{e.median_abs_error_h:,.1f}"
        lines.append(f"| {name} | {e.jobs:,} | {share_text(e.within_2x)} | {share_text(e.within_range)} | "
                     f"{share_text(e.too_early)} | "
                     f"{share_text(e.too_late)} | "
                     f"{e.without_estimate:,} | {error} |")
    return [*lines, ""]


def fairness_table(results: Mapping[str, StrategyResult]) -> list[str]:
    """Per strategy, received ÷ entitled accelerator-hours over every team-week with a share: worst and 10th pct."""
    rows = [(n, r.fairness) for n, r in results.items() if r.fairness is not None]
    if not rows:
        return []
    hours = rows[0][1].hours if rows[0][1] else 168
    lines = [f"## Fairness over {hours} h windows", "",
             "Received ÷ entitled accelerator-hours, over every team and every window in which the team was "
             "entitled to at least one accelerator-hour.", "",
             "| strategy | team-windows | worst | 10th percentile |", "|---|---|---|---|"]
    lines += [f"| {n} | {f.windows} | {f.worst_ratio:.2f} | {f.p10_ratio:.2f} |" for n, f in rows if f]
    return [*lines, ""]


def write_report(results: Mapping[str, StrategyResult], out_dir: str | Path, *, title: str, setup: str,
                 labels: Mapping[str, str] | None = None, extra: Sequence[str] = ()) -> Path:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    files = _plots(results, out)
    lines = [f"# {title}", "", setup, "", markdown_table(results), "", *pool_tables(results),
             *fairness_table(results), *extra, *labels_table(labels or {})]
    for name, r in results.items():
        lines += [f"## {name}: per team", "",
                  "| team | jobs | done | wait p50 h | wait p95 h | wait mean h | preempt | lost GPU-h | "
                  "received GPU-h | entitled GPU-h | deficit GPU-h | worst week | quota chg |", "|" + "---|" * 13]
        for team, t in r.teams.items():
            worst = "" if t.worst_week_ratio is None else f"{t.worst_week_ratio:.2f}"
            lines.append(f"| {team} | {t.jobs} | {t.jobs_completed} | {t.wait_p50_s / HOUR:.2f} | "
                         f"{t.wait_p95_s / HOUR:.1f} | {t.wait_mean_s / HOUR:.1f} | {t.preemptions} | "
                         f"{t.lost_gpu_hours:,.0f} | {t.received_gpu_hours:,.0f} | {t.entitled_gpu_hours:,.0f} | "
                         f"{t.entitlement_deficit_gpu_hours:,.0f} | {worst} | {t.quota_changes} |")
        lines.append("")
        if r.budgets:
            lines += [f"## {name}: budgets (accelerator-hours per period, % of the budget)", "",
                      "| team | period | used | % |", "|---|---|---|---|"]
            for team, periods in r.budgets.items():
                lines += [f"| {team} | {label} | {u['hours']:,.0f} | {u['percent']:.0f} |"
                          for label, u in periods.items()]
            lines.append("")
    lines += [f"![{f}]({f})" for f in files]
    path = out / "report.md"
    path.write_text("\n".join(lines) + "\n")
    return path
