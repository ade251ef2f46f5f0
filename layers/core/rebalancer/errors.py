"""Error kinds. The state machine's Retry and Catch match on these class names, so keep them stable."""

from __future__ import annotations

from typing import Any

MESSAGE_MAX = 600  # an InvalidInput is one line people read; a huge value never reaches it in full


class RebalancerError(Exception):
    """Base of every error this package raises on purpose."""


class PermanentError(RebalancerError):
    """Retrying will not help: bad input, unknown cluster, invalid policy."""


class TransientError(RebalancerError):
    """Worth a retry: throttling, 5xx, a lock held by another run."""


class InvalidInput(PermanentError):
    """Input that fails validation. Names the source, the field and the offending value."""

    def __init__(self, message: str, *, source: str | None = None, field: str | None = None, value: Any = None):
        self.source = source
        self.field = field
        self.value = value
        prefix = f"{source}: " if source else ""
        where = f"{field}: " if field else ""
        line = " ".join(f"{prefix}{where}{message}".split())
        super().__init__(line if len(line) <= MESSAGE_MAX else f"{line[:MESSAGE_MAX - 1]}…")


class UnknownInstanceType(InvalidInput):
    def __init__(self, instance_type: str, *, field: str | None = None):
        super().__init__(
            f"unknown instance type {instance_type!r} (not a SageMaker HyperPod ClusterInstanceType this tool knows)",
            field=field,
            value=instance_type,
        )
        self.instance_type = instance_type


class ConflictError(PermanentError):
    """Someone changed a quota between our read and our write. We never overwrite an edit we did not see."""


class ApplyFailed(PermanentError):
    """A change could not be applied; carries the per-change outcomes so far."""


class ApprovalNotPending(Exception):
    """The approval was decided already, or expired: a replayed or late link changes nothing."""

    def __init__(self, status: str):
        super().__init__(status)
        self.status = status
