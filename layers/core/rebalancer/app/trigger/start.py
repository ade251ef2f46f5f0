"""From an event to at most one run per cluster: parse, keep managed clusters, debounce with the per-cluster lock,
start the state machine under a deterministic execution name. Never raises on a bad event.

No change is lost: an event that finds a run under way marks the lock (`request_followup`); when that run ends,
Step Functions' status-change event comes back here and starts one follow-up run, which reads the cluster after
the change. A burst during a run thus costs one more run, not one per event.

The command line's apply and rollback take the same lock as a lease that expires (`by` names who holds it). A run
meets it as it meets another run: it waits (the lock is marked, with what the follow-up run needs), and the command,
letting go, starts that follow-up through `hand_over` as a run's end does here."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from dataclasses import KW_ONLY, asdict, dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any, Protocol

from botocore.exceptions import ClientError
from pydantic import ValidationError

from rebalancer.adapters.aws import classify, error_code
from rebalancer.app.observability import logger
from rebalancer.app.trigger.events import Trigger, event_id_of, parse_trigger
from rebalancer.app.trigger.gap import EventMarks, Watch
from rebalancer.app.workflow.audit import AuditLog, trigger_started
from rebalancer.domain.clock import Clock
from rebalancer.domain.records import LockResult
from rebalancer.errors import LockUnreadable
from rebalancer.parsing.text import cut_utf8

# A lock whose holder has not shown up in Step Functions yet is still being started by another invocation.
STARTING_GRACE = timedelta(seconds=60)
REASON_MAX_BYTES = 512  # of why an event was refused, in the outcome and the log
NAME_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


class Locks(Protocol):
    """The per-cluster lock: rebalancer.adapters.dynamodb.locks; rebalancer_tools.fakes.memory_store.MemoryLocks."""

    def acquire(self, cluster_name: str, holder: str, ttl: timedelta, *, replace: str | None = None,
                if_followup: bool = False, run_arn: str | None = None, by: str | None = None) -> LockResult: ...
    def request_followup(self, cluster_name: str, holder: str, reason: str, *, machine: str | None = None,
                         lease: timedelta | None = None) -> bool: ...


class LocksAndEvents(Protocol):
    """The per-cluster locks, the cluster events seen (rebalancer.app.trigger.gap), the audit log the starts go in;
    the table's clock."""

    @property
    def locks(self) -> Locks: ...
    @property
    def audit(self) -> AuditLog: ...
    @property
    def sightings(self) -> EventMarks: ...
    def now(self) -> datetime: ...


@dataclass(slots=True)
class TriggerOutcome:
    """What the trigger did with one event (the handler's answer), filled in as it goes."""

    event_id: str
    status: str  # started | debounced | ignored | malformed | irrelevant | blocked (a lock item we cannot read)
    _: KW_ONLY
    executions: list[str] = field(default_factory=list)
    debounced: list[str] = field(default_factory=list)
    blocked: list[str] = field(default_factory=list)  # one line per cluster whose lock item the code did not write
    reason: str = ""
    replayed: int = 0  # cluster events listed after a gap (rebalancer.app.trigger.gap)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def execution_name(cluster_name: str, now: datetime, debounce: timedelta) -> str:
    """The same for every event of one cluster within one debounce window: a burst maps to one name, and Step
    Functions itself refuses a second execution of that name."""
    step = int(debounce.total_seconds())
    window = int(now.timestamp()) // step * step
    stamp = datetime.fromtimestamp(window, now.tzinfo).strftime("%Y%m%dT%H%M%S")
    return f"{NAME_UNSAFE.sub('-', cluster_name)[:60]}-{stamp}"


def followup_name(cluster_name: str, previous: str, now: datetime, debounce: timedelta) -> str:
    """The run after `previous`: this window's name and a digest of the previous run's, so it never repeats a
    name Step Functions has seen (names are unique per state machine for 90 days), and a duplicate delivery of one
    finish event maps to the same name."""
    digest = hashlib.sha256(previous.encode()).hexdigest()[:7]
    return f"{execution_name(cluster_name, now, debounce)[:72]}-{digest}"


def execution_arn(state_machine_arn: str, name: str) -> str:
    return state_machine_arn.replace(":stateMachine:", ":execution:", 1) + f":{name}"


def holder_busy(sfn: Any, lock: LockResult, now: datetime) -> bool:
    """Whether the lock's holder is still at work: a command-line lease until it expires (the lock could not be
    taken, so it has not); a run while Step Functions says it runs, or, not started yet, for STARTING_GRACE; a
    holder whose execution is not recorded in the lock (written before runs were) until the lock expires."""
    if lock.by is not None or lock.run_arn is None:
        return lock.expires_at is None or lock.expires_at > now
    try:
        status = sfn.describe_execution(executionArn=lock.run_arn)["status"]
    except ClientError as e:
        if error_code(e) == "ExecutionDoesNotExist":
            return now - lock.acquired_at < STARTING_GRACE
        raise classify("states:DescribeExecution", lock.run_arn, e) from e
    return bool(status == "RUNNING")


class Starter:
    def __init__(self, *, store: LocksAndEvents, sfn: Any, state_machine_arn: str, managed: tuple[str, ...],
                 lock_ttl: timedelta, debounce: timedelta, clock: Clock,
                 sagemaker: Callable[[], Any] | None = None, event_gap: timedelta | None = None):
        """`sagemaker` (what makes the SageMaker client, called only when a gap is replayed) and `event_gap`: list
        the cluster's events after a silence longer than `event_gap`
        (rebalancer.app.trigger.gap); without them, events are still recorded as seen but no gap is replayed."""
        self.store = store
        self.watch = Watch(store.sightings, store.audit, sagemaker if event_gap is not None else None,
                           event_gap or timedelta.max)
        self.clock = clock
        self.sfn = sfn
        self.state_machine_arn = state_machine_arn
        self.managed = managed
        self._managed = frozenset(managed)  # looked up once per cluster an event names (an alarm may name 10,000)
        self.lock_ttl = lock_ttl
        self.debounce = debounce

    def handle(self, event: Any) -> TriggerOutcome:
        event_id = event_id_of(event)
        try:
            trigger = parse_trigger(event)
        except (ValidationError, ValueError, TypeError) as e:
            reason = _first_error(e)
            logger.warning("malformed or unknown event", extra={"event_id": event_id, "reason": reason})
            return TriggerOutcome(event_id, "malformed", reason=reason)
        if not trigger.relevant:
            return TriggerOutcome(event_id, "irrelevant", reason=trigger.summary)
        if trigger.finished is not None:
            return self.after_run(event_id, trigger, trigger.finished)
        clusters = [c for c in trigger.clusters if c in self._managed] if trigger.clusters else list(self.managed)
        if not clusters:
            named = _named(trigger.clusters)
            logger.info("event of an unmanaged cluster", extra={"event_id": event_id, "clusters": named})
            return TriggerOutcome(event_id, "ignored", reason=f"not a managed cluster: {named}")
        outcome = TriggerOutcome(event_id, "debounced", reason=trigger.summary)
        for cluster in clusters:
            outcome.replayed += self.watch.saw(cluster, trigger)
            try:
                name = self.start(cluster, trigger)
            except LockUnreadable as e:
                _blocked(outcome, e)
                continue
            (outcome.executions if name else outcome.debounced).append(name or cluster)
        if outcome.executions:
            outcome.status = "started"
        elif outcome.blocked and not outcome.debounced:
            outcome.status = "blocked"
        return outcome

    def after_run(self, event_id: str, trigger: Trigger, finished: str) -> TriggerOutcome:
        """A run ended: start the follow-up a change during it asked for, if any (and if no other run took over)."""
        if trigger.state_machine_arn != self.state_machine_arn:
            return TriggerOutcome(event_id, "ignored", reason=f"not our state machine: {trigger.state_machine_arn}")
        outcome = TriggerOutcome(event_id, "irrelevant", reason=trigger.summary)
        followup = trigger.model_copy(update={"kind": "follow-up",
                                              "summary": f"changes that arrived during run {finished}"})
        for cluster in (c for c in trigger.clusters if c in self._managed):
            try:
                name = self.hand_over(cluster, finished, followup)
            except LockUnreadable as e:
                _blocked(outcome, e)
                outcome.status = "blocked" if outcome.status == "irrelevant" else outcome.status
                continue
            if name is not None:
                outcome.executions.append(name)
                outcome.status = "started"
        return outcome

    def hand_over(self, cluster: str, finished: str, followup: Trigger) -> str | None:
        """`finished` lets go of the lock: the follow-up run a change during it asked for takes it and starts (None
        when none was asked for, or another run took over)."""
        name = followup_name(cluster, finished, self.clock(), self.debounce)
        lock = self.store.locks.acquire(cluster, name, self.lock_ttl, replace=finished, if_followup=True,
                                        run_arn=execution_arn(self.state_machine_arn, name))
        return name if lock.acquired and self._start(cluster, name, followup) else None

    def start(self, cluster: str, trigger: Trigger) -> str | None:
        """The execution name started, or None when a run of this cluster is already under way (which then asks
        for a follow-up run after it)."""
        now = self.clock()
        name = execution_name(cluster, now, self.debounce)
        lock = self.store.locks.acquire(cluster, name, self.lock_ttl,
                                        run_arn=execution_arn(self.state_machine_arn, name))
        if not lock.acquired:
            holder = lock.holder
            if self._holder_busy(lock, now):
                followup = self.store.locks.request_followup(cluster, holder, trigger.summary,
                                                             machine=self.state_machine_arn, lease=self.lock_ttl)
                # The run may have ended before the mark landed (its finish event then found none): look again.
                if not followup or self._holder_busy(lock, now):
                    logger.info("run already under way; a follow-up run will plan this change",
                                extra={"cluster": cluster, "holder": holder, "by": lock.by,
                                       "event_id": trigger.event_id})
                    return None
            name = followup_name(cluster, holder, now, self.debounce)
            lock = self.store.locks.acquire(cluster, name, self.lock_ttl, replace=holder,
                                            run_arn=execution_arn(self.state_machine_arn, name))
            if not lock.acquired:
                return None  # another invocation took over: its run reads the cluster after this change
        return name if self._start(cluster, name, trigger) else None

    def _start(self, cluster: str, name: str, trigger: Trigger) -> bool:
        described = {"kind": trigger.kind, "event_id": trigger.event_id, "summary": trigger.summary}
        run_input = {"cluster_name": cluster, "trigger": described}
        try:
            self.sfn.start_execution(stateMachineArn=self.state_machine_arn, name=name, input=json.dumps(run_input))
        except ClientError as e:
            if error_code(e) == "ExecutionAlreadyExists":
                return False
            raise classify("states:StartExecution", name, e) from e
        trigger_started(self.store.audit, cluster, name, described)
        return True

    def _holder_busy(self, lock: LockResult, now: datetime) -> bool:
        if lock.run_arn is None and lock.by is None:  # written before locks named their run: it is one of ours
            lock = replace(lock, run_arn=execution_arn(self.state_machine_arn, lock.holder))
        return holder_busy(self.sfn, lock, now)


def _blocked(outcome: TriggerOutcome, e: LockUnreadable) -> None:
    """A cluster whose lock item the code did not write: one line in the log and the outcome, no run, no traceback
    (an event retried would meet the same item)."""
    logger.error(str(e), extra={"cluster": e.cluster_name, "event_id": outcome.event_id})
    outcome.blocked.append(str(e))
    outcome.reason = str(e)


def _named(clusters: tuple[str, ...], shown: int = 3) -> str:
    """The first few cluster names and how many more."""
    rest = len(clusters) - shown
    return ", ".join(clusters[:shown]) + (f" and {rest:,} more" if rest > 0 else "")


def _first_error(e: Exception) -> str:
    if isinstance(e, ValidationError):
        err = e.errors(include_url=False)[0]
        return cut_utf8(f"{'.'.join(str(p) for p in err['loc'])}: {err['msg']}", REASON_MAX_BYTES)
    return cut_utf8(str(e).splitlines()[0], REASON_MAX_BYTES) if str(e) else type(e).__name__
