"""Apply: `runs.apply_run`, the run's plan written. On failure its error's class name routes the state machine to
the Rollback step."""

from __future__ import annotations

from typing import Any

from rebalancer.app.workflow import runs
from rebalancer.app.workflow.runs import RecordsAndVersions, SchedulerConfigs, Writer
from rebalancer.app.workflow.state import ApplyResult, RunRef


def apply(run: RunRef, *, store: RecordsAndVersions, writer: Writer, configs: SchedulerConfigs | None = None,
          approved_by: str | None = None) -> dict[str, Any]:
    """What Verify polls: the quotas written, the scheduler config if it was (the outcomes are in the audit record)."""
    done = runs.apply_run(run, store=store, writer=writer, configs=configs, who=approved_by)
    written = [o.quota_id for o in done.report.outcomes if o.result == "applied" and o.quota_id]
    return ApplyResult(quota_ids=written,
                       scheduler_config_id=done.scheduler.config_id if done.scheduler else None).as_state()
