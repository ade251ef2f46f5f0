"""Rollback: `runs.rollback_run`, what this run wrote back to its snapshot state; RollbackFailed when not all of
it could be."""

from __future__ import annotations

from typing import Any

from rebalancer.app.workflow import runs
from rebalancer.app.workflow.runs import RecordsAndVersions, SchedulerConfigs, Writer
from rebalancer.app.workflow.state import RunRef
from rebalancer.errors import RollbackFailed


def rollback(run: RunRef, error: dict[str, Any] | None, *, store: RecordsAndVersions, writer: Writer,
             configs: SchedulerConfigs | None = None) -> dict[str, Any]:
    done = runs.rollback_run(run, error, store=store, writer=writer, configs=configs)
    if not done.ok:
        raise RollbackFailed(done.undo.error or "rollback incomplete: " + "; ".join(
            done.undo.lines() + ([done.scheduler.line()] if done.scheduler else [])))
    return {"restored": [o.quota_id for o in done.undo.outcomes if o.quota_id], "outcomes": done.lines()}
