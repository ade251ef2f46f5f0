"""Every error kind this package raises on purpose, and what kind it is: the class hierarchy says it.

  RebalancerError
  ├── TransientError          worth a retry (throttling, 5xx, a lock held, quotas still settling)
  └── PermanentError          retrying will not help
      ├── InvalidInput        bad input; one line naming the field and the value (also a ValueError)
      │   ├── UnknownInstanceType, UnknownMigProfile, InvalidName
      │   ├── ReservationRefused                          a reservation that cannot fit, or bad times
      │   └── BadLink ── LinkExpired                      an approval link or form that decides nothing
      ├── ConflictError       someone else changed what we were about to write
      │   ├── ApprovalNotPending                          decided already, or expired
      │   ├── ReservationNotPending                       approved or cancelled already
      │   └── FormAlreadySubmitted
      ├── NotFound ── UnknownApproval, UnknownReservation
      ├── RecordUnreadable    a stored document this version cannot read (recorded by an older one)
      │   └── LockUnreadable                              a cluster's lock item the code did not write
      ├── MethodNotAllowed, SignInRequired                a request the approval API does not take
      ├── RunNotWaiting       the run no longer waits for a decision
      ├── DecisionNotDelivered  recorded, but Step Functions did not take it
      ├── ApprovalRejected    the error name a rejection ends RequestApproval with (SendTaskFailure)
      ├── ApprovalRequired    a plan that needs approval, written without one (the command line's --approve)
      ├── CredentialsError    the caller's AWS configuration: profile, credentials, region
      └── ApplyFailed, VerifyTimedOut, RollbackFailed

Mapped in one place each: the state machine's Retry / Catch (statemachines/rebalance.asl.json) match these class
names, so keep them stable (tests/unit/test_error_kinds.py reads both); the approval API
(rebalancer.app.approvals.http) turns each kind into a page with one exception handler per kind. Step Functions
matches the exact class name a Lambda raised, not its bases: a new transient kind must be named in every Retry.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

MESSAGE_MAX = 600  # an InvalidInput is one line people read; a huge value never reaches it in full


class RebalancerError(Exception):
    """Base of every error this package raises on purpose."""


class PermanentError(RebalancerError):
    """Retrying will not help: bad input, unknown cluster, invalid policy."""


class TransientError(RebalancerError):
    """Worth a retry: throttling, 5xx, a lock held by another run."""


class InvalidInput(PermanentError, ValueError):
    """Input that fails validation. Names the source, the field and the offending value. A ValueError too, so that a
    pydantic validator that meets one reports it at the field's path like any other bad value."""

    def __init__(self, message: str, *, source: str | None = None, field: str | None = None, value: Any = None):
        self.source = source
        self.field = field
        self.value = value
        prefix = f"{source}: " if source else ""
        where = f"{field}: " if field else ""
        line = " ".join(f"{prefix}{where}{message}".split())
        super().__init__(line if len(line) <= MESSAGE_MAX else f"{line[:MESSAGE_MAX - 1]}…")


class UnknownInstanceType(InvalidInput):
    """`known`: the names this tool knows, for "did you mean …?", worked out only when the error is said (a lookup
    that expects a miss, such as a MIG partition's key, catches it unsaid, and the distances cost milliseconds)."""

    def __init__(self, instance_type: str, *, field: str | None = None,
                 known: Callable[[], Iterable[str]] | None = None):
        super().__init__(
            f"unknown instance type {instance_type!r} (not a SageMaker HyperPod ClusterInstanceType this tool knows)",
            field=field,
            value=instance_type,
        )
        self.instance_type = instance_type
        self._known = known
        self._said: str | None = None

    def __str__(self) -> str:
        if self._said is None:
            from rebalancer.spelling import nearest

            near = (nearest(self.instance_type, self._known(), within=2)
                    if self._known is not None and len(self.instance_type) <= 64 else None)
            self._said = super().__str__() + (f"; did you mean {near}?" if near else "")
        return self._said


class UnknownMigProfile(InvalidInput):
    """A MIG profile the GPU (or the instance type) does not have, or a string that is no MIG profile."""


class InvalidName(InvalidInput):
    """A string that cannot become a SageMaker EntityName (a quota's or a scheduler config's name)."""


class ReservationRefused(InvalidInput):
    """A reservation refused when made: above the pool's capacity or the team's cap, overlapping others beyond the
    capacity, or a window that is empty, past or has no time zone."""


class CredentialsError(PermanentError):
    """No usable AWS configuration: a profile that does not exist, no credentials, expired or invalid ones, no or an
    unknown region. About the caller, not the request: one line naming the cause (rebalancer.adapters.aws)."""


class ConflictError(PermanentError):
    """Someone changed a quota between our read and our write. We never overwrite an edit we did not see."""


class ApplyFailed(PermanentError):
    """A change could not be applied; carries the per-change outcomes so far."""


class VerifyTimedOut(PermanentError):
    """The changed quotas did not reach Created/Updated within the verify bound."""


class RollbackFailed(PermanentError):
    """The rollback could not restore every quota; a person must look."""


# --- approvals ---------------------------------------------------------------------------------------------------
# Their messages are sentences for the approval page (or Slack's reply): safe to show, one line each.
class ApprovalRejected(PermanentError):
    """Not raised here: the error a rejection sends to the waiting RequestApproval task (SendTaskFailure), which the
    state machine catches by this class's name."""


class ApprovalRequired(PermanentError):
    """A plan that needs an admin's approval was about to be written without one: nothing is written."""


_NOT_PENDING = {"approved": "This change was already approved.",
                "rejected": "This change was already rejected.",
                "expired": "This approval has expired; nothing was changed.",
                "unknown": "There is no such approval."}


class ApprovalNotPending(ConflictError):
    """The approval was decided already, or expired, or never existed: a replayed or late link changes nothing."""

    def __init__(self, status: str):
        super().__init__(_NOT_PENDING.get(status, f"This approval is {status}."))
        self.status = status


class ReservationNotPending(ConflictError):
    """A reservation asked to be approved (or cancelled) that is not in a state to be."""


class RunNotWaiting(PermanentError):
    """The run's task token is no longer accepted (the run expired, ended or was stopped); `code` is Step Functions'
    error code."""

    def __init__(self, code: str):
        super().__init__("The run is no longer waiting for this decision (it expired or ended); nothing was changed.")
        self.code = code


class DecisionNotDelivered(PermanentError):
    """The decision is recorded but Step Functions refused or failed to take it; `code` says why."""

    def __init__(self, code: str):
        super().__init__(f"Your decision was recorded but could not be passed on to the run ({code}); the run ends "
                         "when the approval expires.")
        self.code = code


class FormAlreadySubmitted(ConflictError):
    """A review form posted a second time."""


class RecordUnreadable(PermanentError):
    """A document the table holds (a run's plan or snapshot, a reservation, an approval) that no longer validates:
    recorded by an older version of the controller, or edited by hand. The message names it and says what to do."""


class LockUnreadable(RecordUnreadable):
    """A cluster's lock item that is not one the code writes (a field removed or retyped by hand): one line naming
    the item and what to do, in the trigger and the CLI alike (rebalancer.adapters.dynamodb.locks)."""

    def __init__(self, cluster_name: str, table_name: str, problem: str):
        super().__init__(f"the lock of cluster {cluster_name} (item CLUSTER#{cluster_name} / LOCK of table "
                         f"{table_name}) was not written by the controller: {problem}; no run or command can take "
                         "the cluster until it goes: check that no writer is at work, then `rebalancer lock break "
                         f"--cluster {cluster_name} --reason ...`")
        self.cluster_name, self.problem = cluster_name, problem


class NotFound(PermanentError):
    """No page at this address."""


class UnknownApproval(NotFound):
    """An approval id of the right shape that the store does not hold."""


class UnknownReservation(NotFound):
    """No reservation of the cluster has this id."""


class BadLink(InvalidInput):
    """The link was forged, altered, expired or incomplete. The message is safe to show on a page."""


class LinkExpired(BadLink):
    """A genuine link (or form) whose time has passed."""


class MethodNotAllowed(PermanentError):
    """A method the address does not take; `allow` is the one it does."""

    def __init__(self, message: str, *, allow: str):
        super().__init__(message)
        self.allow = allow


class SignInRequired(PermanentError):
    """The approval API's authorizer is on and the caller's token names no one we believe."""
