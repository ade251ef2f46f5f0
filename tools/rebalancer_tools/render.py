"""A plan for people: a rich table of before → after per team and pool, with the reasons, in 80 columns."""

from __future__ import annotations

from rich.console import Console, Group, RenderableType
from rich.table import Table
from rich.text import Text

from rebalancer.domain.plan import Change, Plan

UNITS = {"accelerators": "acc", "vcpu": "vCPU", "partitions": "part", "memory_gib": "GiB"}


def plan_row(c: Change) -> tuple[str, str, Text, str]:
    """One row of the plan: a change, or a change a hold keeps back (what the policy wants, and the hold, under
    the amounts)."""
    style = "red" if c.after < c.before else "green" if c.after > c.before else "yellow"
    move = Text.assemble(f"{c.before:g} → ", (f"{c.after:g}", style), f" {UNITS.get(c.resource, c.resource)}")
    if c.wanted is not None:
        move.append(f"\nheld, wants {c.wanted:g}", style="yellow")
    return c.team, c.pool, move, c.reason


def plan_table(plan: Plan) -> Table:
    table = Table(title=f"plan for {plan.cluster_name} ({plan.mode})", title_justify="left", expand=False,
                  show_lines=True)
    table.add_column("team", no_wrap=True, max_width=14)
    table.add_column("pool", max_width=18, overflow="fold")
    table.add_column("before → after", no_wrap=True)
    table.add_column("why", ratio=1, min_width=20)
    for c in (*plan.changes, *plan.held):
        table.add_row(*plan_row(c))
    return table


def plan_renderable(plan: Plan) -> RenderableType:
    parts: list[RenderableType] = []
    headline = plan.headline()
    if plan.changes or plan.held:
        parts.append(plan_table(plan))
    if headline:
        parts.append(Text(headline, style="bold"))
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
