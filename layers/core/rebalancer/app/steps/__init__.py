"""The state machine's task steps, one module each: collect, plan, apply, verify, rollback. Each takes the run
reference the state machine passes, calls one use case (`app.runs`, `app.run_plan`; the CLI calls the same ones)
through injected ports, and returns a small JSON-able result for the execution's state (big documents stay in
DynamoDB). Apart so that a step's Lambda loads only its own use case: the writing steps never load the planner."""

from __future__ import annotations

from collections.abc import Sequence

MAX_STATE_LINES = 20  # console edits named in the execution's state (the whole list is in the stored plan)


def summarised(lines: Sequence[str], limit: int = MAX_STATE_LINES) -> list[str]:
    """At most `limit` lines for the execution's state (Step Functions allows 256 KB), the last one counting the
    rest; the stored plan and apply report keep every line."""
    if len(lines) <= limit:
        return list(lines)
    return [*lines[:limit - 1], f"… and {len(lines) - limit + 1} more (all of them are in the run's stored record)"]
