"""Verify: one poll of what the apply wrote; the state machine waits and calls again until it settles."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rebalancer.app.workflow.runs import SchedulerConfigs, Writer
from rebalancer.app.workflow.state import VerifyResult
from rebalancer.errors import PermanentError, TransientError, VerifyTimedOut


def verify(attempt: int, quota_ids: Sequence[str], *, writer: Writer, poll_seconds: int,
           max_attempts: int, scheduler_config_id: str | None = None,
           configs: SchedulerConfigs | None = None) -> dict[str, Any]:
    """One poll (the writer and the scheduler-config client are built with a zero-length poll bound). Not settled
    yet ⇒ done False and the state machine waits and calls again; a *Failed status raises ApplyFailed; too many
    polls raise VerifyTimedOut."""
    attempt += 1
    try:
        writer.verify(quota_ids)
        if scheduler_config_id:
            if configs is None:
                raise PermanentError("the run wrote the scheduler config but no scheduler-config client was given")
            configs.wait(scheduler_config_id)
    except TransientError as e:
        if attempt >= max_attempts:
            raise VerifyTimedOut(f"quotas not settled after {attempt} polls: {e}") from None
        return VerifyResult(done=False, attempt=attempt, wait_seconds=poll_seconds).as_state()
    return VerifyResult(done=True, attempt=attempt, wait_seconds=poll_seconds).as_state()
