"""The backtest, side by side per policy: a table in the terminal, and a report folder with the same figures
(summary.json, summary.md) and one PNG timeline per team (its demand, what it ran, each policy's quota)."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rebalancer_tools.backtest.replay import NOT_REPLAYED, Replay, State
from rebalancer_tools.reports import figures
from rebalancer_tools.reports.tables import Column, Listing, Record
from rebalancer_tools.simulator.metrics import WINDOW_HOURS

if TYPE_CHECKING:
    from matplotlib.figure import Figure

# summary key → column title, in the order shown
ROWS: tuple[tuple[str, str], ...] = (
    ("runs_changed", "runs that changed something"),
    ("approvals", "approvals asked"),
    ("accelerators_moved", "accelerators moved"),
    ("demand_met_percent", "demand met inside quota (%)"),
    ("deficit_accelerator_hours", "deficit vs entitlement (accelerator-h)"),
    ("idle_guaranteed_accelerator_hours", "guaranteed but idle (accelerator-h)"),
    ("reversals_within_hour", "quota reversals within an hour"),
)


WORSE_RATIO = 0.9  # a team is worse off under a policy that meets less than 90 % of what the first one met
WORSE_FLOOR_H = 1.0  # ... and at least one accelerator-hour less


def worse_off(replays: Sequence[Replay]) -> dict[str, list[tuple[str, float, float]]]:
    """Per policy after the first: (team, met accelerator-hours, the first policy's), for each team met less."""
    if len(replays) < 2:
        return {}
    first = replays[0]
    out = {}
    for r in replays[1:]:
        out[r.name] = [(t, r.teams[t].met_hours, first.teams[t].met_hours) for t in sorted(r.teams)
                       if t in first.teams and r.teams[t].met_hours < WORSE_RATIO * first.teams[t].met_hours
                       and first.teams[t].met_hours - r.teams[t].met_hours >= WORSE_FLOOR_H]
    return out


def _week_rows(replays: Sequence[Replay]) -> list[str]:
    lines = ["", f"## Demand met ÷ entitled over {WINDOW_HOURS} h windows", "",
             "Over every team and every week in which the team was entitled to at least one accelerator-hour.", "",
             "| policy | team-weeks | worst | 10th percentile |", "|---|---:|---:|---:|"]
    for r in replays:
        f = r.fairness()
        lines.append(f"| {r.name} | {f.windows} | {f.worst_ratio:.2f} | {f.p10_ratio:.2f} |")
    found = worse_off(replays)
    if found:
        first = replays[0].name
        lines += ["", f"## Teams worse off than under {first}", "",
                  f"Demand met inside quota below {WORSE_RATIO:.0%} of what {first} met (and by at least "
                  f"{WORSE_FLOOR_H:g} accelerator-hour).", ""]
        for name, teams in found.items():
            lines.append(f"- {name}: " + (", ".join(f"{t} {m:,.1f} vs {b:,.1f} accelerator-h" for t, m, b in teams)
                                           or "none"))
    return lines


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:,.1f}"
    return f"{value:,}" if isinstance(value, int) else str(value)


def side_by_side(replays: Sequence[Replay], title: str) -> Listing:
    """One row per figure, one column per policy (the records carry the numbers; the cells, as people read them)."""
    summaries = [r.summary() for r in replays]
    names = [r.name for r in replays]
    records: list[dict[str, Any]] = [{"figure": label, **{n: s[key] for n, s in zip(names, summaries, strict=True)}}
                                     for key, label in ROWS]
    records.append({"figure": f"worst team-week met ÷ entitled ({WINDOW_HOURS} h)",
                    **{n: s["fairness_windows"]["worst_ratio"] for n, s in zip(names, summaries, strict=True)}})
    losers = worse_off(replays)
    if losers:
        records.append({"figure": f"teams worse off than {replays[0].name}", names[0]: None,
                        **{r.name: len(losers[r.name]) for r in replays[1:]}})
    fairness = records[len(ROWS)]["figure"]

    def cell(name: str) -> Column:
        def text(r: Record) -> str:
            value = r.get(name)
            return "-" if value is None else f"{value:.2f}" if r["figure"] == fairness else _fmt(value)

        return Column(name, cell=text, numeric=True)

    return Listing(title=title, columns=(Column("", key="figure"), *(cell(n) for n in names)),
                   records=tuple(records), fields=("figure", *names))


def markdown(replays: Sequence[Replay], title: str) -> str:
    summaries = [r.summary() for r in replays]
    lines = [f"# {title}", "", "| | " + " | ".join(r.name for r in replays) + " |",
             "|---|" + "---:|" * len(replays)]
    for key, label in ROWS:
        lines.append(f"| {label} | " + " | ".join(_fmt(s[key]) for s in summaries) + " |")
    lines += ["", "## Per team: deficit / guaranteed-but-idle accelerator-hours", "",
              "| team | " + " | ".join(r.name for r in replays) + " |", "|---|" + "---:|" * len(replays)]
    teams = sorted({t for r in replays for t in r.teams})
    for t in teams:
        cells = [f"{r.teams[t].deficit_hours:,.1f} / {r.teams[t].idle_guaranteed_hours:,.1f}"
                 if t in r.teams else "-" for r in replays]
        lines.append(f"| {t} | " + " | ".join(cells) + " |")
    return "\n".join([*lines, *_week_rows(replays), *_budget_lines(replays)]) + "\n"


def _budget_lines(replays: Sequence[Replay]) -> list[str]:
    """Per policy with budgets, each team's accelerator-hours and % per period, and what of budgets is not
    replayed."""
    lines: list[str] = []
    for r in replays:
        if not r.budgets:
            continue
        lines += ["", f"## {r.name}: budgets (accelerator-hours per period, % of the budget)", ""]
        lines += [f"- {team} {period}: {u['hours']:,.1f} h, {u['percent']:g} %"
                  for team, periods in r.budgets.items() for period, u in periods.items()]
    if lines:
        lines += ["", "Not replayed: " + "; ".join(NOT_REPLAYED) + "."]
    return lines


def team_series(states: Sequence[State], team: str, pool: str | None = None) -> tuple[list[float], list[float]]:
    """A team's demand (in use + pending) and in use per state, in `pool` (None: summed over pools)."""
    demand, in_use = [], []
    for s in states:
        pools = s.use.get(team, {})
        chosen = [pools.get(pool, (0.0, 0.0))] if pool is not None else list(pools.values())
        demand.append(sum(d for d, _ in chosen))
        in_use.append(sum(u for _, u in chosen))
    return demand, in_use


def team_pools(team: str, states: Sequence[State], replays: Sequence[Replay]) -> list[str]:
    """The pools a team had demand, use or quota in under any policy, in order."""
    used = {pool for s in states for pool in s.use.get(team, {})}
    held = {pool for r in replays for q in r.pool_quota.get(team, []) for pool, n in q.items() if n}
    return sorted(used | held)


def team_figure(team: str, states: Sequence[State], replays: Sequence[Replay]) -> Figure:
    """A team's demand (in use + pending), what it ran, and each policy's quota over the history's time, one panel
    per pool it had anything in (accelerators of two types do not add up); policies that gave it the same quota are
    all drawn and the legend says they are the same. Each state holds until the next, the last one for its own
    length, so the newest values are as wide as the others."""
    from datetime import timedelta

    times: Any = [s.at for s in states]  # matplotlib's date converter takes datetimes (its stubs say arrays)
    edges: Any = [*times, times[-1] + timedelta(hours=states[-1].hours)] if states else []
    pools = team_pools(team, states, replays) or [""]
    fig, axes = figures.new_figure(len(pools), width=12, row_height=3.2 if len(pools) == 1 else 2.4)
    running = "in use"

    def line(axes: Any, name: str, _xs: Any, ys: Sequence[float], **style: Any) -> None:
        axes.step(edges, [*ys, ys[-1]], where="post", **({"color": "0.45"} if name == running else {}), **style)

    for ax, pool in zip(axes, pools, strict=True):
        demand, in_use = team_series(states, team, pool or None)
        ax.fill_between(edges, [*demand, demand[-1]], step="post", color="0.85", label="demand (in use + pending)")
        quotas = [(r.name, times, [q.get(pool, 0.0) if pool else sum(q.values())
                                       for q in r.pool_quota.get(team, [{}] * len(r.times))]) for r in replays]
        # What the team ran and each policy's quota: a quota it ran exactly, or two policies alike, are all drawn.
        figures.draw_distinct(ax, [(running, times, in_use), *quotas], line,
                              lambda name: name if name == running else f"quota: {name}")
        ax.set_ylabel(f"{pool.removeprefix('ml.')}\naccelerators" if pool else "accelerators", fontsize=8)
        ax.set_ylim(bottom=0)
    axes[0].set_title(f"{team}: accelerators" + (", one panel per instance type" if len(pools) > 1 else
                                                  f" ({pools[0]})" if pools[0] else ""), loc="left")
    figures.time_axis(axes[-1])
    figures.legend_outside(fig, axes)
    return fig


def plot_team(path: Path, team: str, states: Sequence[State], replays: Sequence[Replay]) -> None:
    figures.save(team_figure(team, states, replays), path, dpi=80)


def write_report(directory: Path, title: str, states: Sequence[State], replays: Sequence[Replay],
                 extra: dict[str, Any] | None = None, notes: Sequence[str] = ()) -> list[Path]:
    """summary.json, summary.md and team-<name>.png; returns the files written. `notes`: what the command said
    about the figures (a history too thin, gaps), kept with them."""
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    doc: dict[str, Any] = {"title": title, "notes": list(notes), "policies": [r.summary() for r in replays],
                           "teams": {r.name: {t: dataclasses.asdict(v) for t, v in sorted(r.teams.items())}
                                     for r in replays}}
    if extra:
        doc.update(extra)
    p = directory / "summary.json"
    p.write_text(json.dumps(doc, indent=2, sort_keys=True, default=str) + "\n")
    written.append(p)
    p = directory / "summary.md"
    text = markdown(replays, title)
    if notes:
        text += "\n" + "".join(f"> {note}\n" for note in notes)
    teams = sorted({t for r in replays for t in r.quota})
    text += "\n## Timelines\n\n" + "".join(f"![{t}](team-{t}.png)\n" for t in teams)
    p.write_text(text)
    written.append(p)
    for t in teams:
        p = directory / f"team-{t}.png"
        plot_team(p, t, states, replays)
        written.append(p)
    return written
