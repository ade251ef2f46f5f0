"""A plan for people: a table of before → after per team and pool, with the reasons, that fits the terminal
(tables.Listing); the same rows as CSV for programs."""

from __future__ import annotations

from typing import Any

from rich.console import Console, Group, RenderableType
from rich.text import Text

from rebalancer.domain.plan import PREEMPTIONS_LISTED, Plan, ran_text
from rebalancer_tools.reports.tables import Column, Listing, Record

UNITS = {"accelerators": "acc", "vcpu": "vCPU", "partitions": "part", "memory_gib": "GiB"}


def _move(r: Record) -> Text:
    """Before → after, and under it what the policy wants when a hold keeps it back (and the hold)."""
    style = "red" if r["after"] < r["before"] else "green" if r["after"] > r["before"] else "yellow"
    unit = UNITS.get(r["resource"], r["resource"])
    move = Text.assemble(f"{r['before']:g} → ", (f"{r['after']:g}", style), f" {unit}")
    if r["wanted"] is not None:
        move.append(f"\nheld, wants {r['wanted']:g}", style="yellow")
    return move


def change_records(plan: Plan) -> tuple[dict[str, Any], ...]:
    """The plan's rows: one per change, then one per change a hold keeps back entirely, the figures of that row
    (the table's, the CSV's)."""
    return tuple({"team": c.team, "pool": c.pool, "resource": c.resource, "before": c.before, "after": c.after,
                  "wanted": c.wanted, "hold": c.hold.label if c.hold is not None else None, "reason": c.reason}
                 for c in (*plan.changes, *plan.held))


def plan_table(plan: Plan) -> Listing:
    return Listing(title=f"plan for {plan.cluster_name} ({plan.mode})",
                   columns=(Column("team", wrap=False), Column("pool", wrap=False),
                            Column("before → after", cell=_move, wrap=False), Column("why", key="reason")),
                   records=change_records(plan), lines=True,
                   fields=("team", "pool", "resource", "before", "after", "wanted", "hold", "reason"))


PREEMPTIONS_SHOWN = 20  # rows of the preemptions table; the plan's JSON lists up to PREEMPTIONS_LISTED


def preemptions_table(plan: Plan, shown: int = PREEMPTIONS_SHOWN) -> Listing:
    """The running workloads the plan's writes would make Kueue preempt, the largest by GPU-hours first; the rest
    counted under the table with the GPU-hours at risk over all of them."""
    records = tuple({"team": p.team, "workload": p.workload, "pool": p.pool, "accelerators": p.accelerators,
                     "ran": ran_text(p.ran_s), "gpu_hours": round(p.gpu_hours, 1)} for p in plan.preemptions[:shown])
    rest = len(plan.preemptions) - len(records) + plan.preemptions_unlisted
    footer = ([f"…and {rest} more (`plan --format json` lists the largest {PREEMPTIONS_LISTED})"] if rest else [])
    return Listing(title=f"would preempt ({plan.preempted_gpu_hours:.1f} GPU-hours of work at risk)",
                   columns=(Column("team", wrap=False), Column("workload"), Column("pool", wrap=False),
                            Column("accelerators", numeric=True), Column("ran", wrap=False),
                            Column("GPU-hours", key="gpu_hours", numeric=True)),
                   records=records, footer=tuple(footer))


def plan_renderable(plan: Plan) -> RenderableType:
    parts: list[RenderableType] = []
    headline = plan.headline()
    if plan.changes or plan.held:
        parts.append(plan_table(plan))
    if headline:
        parts.append(Text(headline, style="bold"))
    if plan.preemptions:
        parts.append(preemptions_table(plan))
    for f in plan.field_changes:
        line = Text(f"{f.team}: {f.field}: {_value(f.before)} → {_value(f.after)}")
        parts.append(line.append(f"  ({f.reason})", style="yellow" if f.console_edit else "dim"))
    if plan.scheduler_requests:
        parts.append(Text(f"{plan.scheduler_requests[0].operation} first (cluster scheduler config)"))
    if not plan.is_empty:
        if plan.mode == "dry-run":
            verdict = Text("dry run: nothing will be applied", style="yellow")
        elif plan.requires_approval:
            verdict = Text("needs approval:", style="yellow")
        else:
            verdict = Text("applies without approval", style="green")
        parts.append(Text(f"{len(plan.requests)} request(s), decreases first; ").append_text(verdict))
        parts.extend(Text(f"  - {r}") for r in plan.approval_reasons)
    parts.extend(Text(f"warning: {w}", style="yellow") for w in plan.warnings)
    return Group(*parts)


def _value(v: object) -> str:
    return "(absent)" if v is None else str(v)


def render_plan(plan: Plan, console: Console) -> None:
    console.print(plan_renderable(plan))
