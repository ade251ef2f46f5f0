"""Applying a plan's quota requests to SageMaker, verifying them, and rolling them back.

Rules, in the order they matter:
- Requests run in the plan's order, each with the TargetVersion the plan read. Before a request that raises a
  quota, every earlier decrease must have settled (Created / Updated), and a quota is written again only once its
  last write has settled: the sum of the quotas of a pool then never exceeds its capacity between two calls.
- A ConflictException means someone else changed the quota since it was read. We re-read it, stop, and report
  both versions; we never retry with the new version, which would overwrite an edit nobody here has seen.
- Throttling and 5xx are retried by botocore (retry mode standard or adaptive, on the client). What is left after
  that stops the apply like any other failure.
- After any failure once something was written, the quotas we wrote are restored to their before-state with
  fresh versions, decreases first again; a quota someone else changed after our write is left alone and reported.
- No write raises the enabled quotas of an instance type above the healthy capacity read just before it
  (rebalancer.domain.healthy), unless they held as much already. The cluster's quotas are read once, before the
  first write, and each write is counted as it is made; its nodes are read then and again before every raising
  write that follows a wait (the decreases settling) or comes more than `Poller.capacity_fresh` seconds after the
  last reading, so a node that fails while the decreases settle is seen by the increases. Raising writes made one
  after another share a reading: reading 22,000 nodes takes 223 calls, longer than a burst of writes. An apply
  stops at a refused write (nothing after it is attempted; the caller rolls back what was written); a rollback
  leaves that quota as it is, restores the rest, and reports what it left.
Polling is bounded and takes an injected sleep and clock.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from botocore.exceptions import ClientError

from rebalancer.adapters.aws import aws_call, error_code
from rebalancer.adapters.sagemaker.healthy import NodeCapacity
from rebalancer.adapters.sagemaker.outcomes import ApplyReport, ChangeOutcome, WriteOperation
from rebalancer.adapters.sagemaker.quotas import QuotaReader
from rebalancer.domain.healthy import Guard, limits
from rebalancer.domain.plan import QuotaRequest
from rebalancer.domain.pools import PoolKey, held, holdings
from rebalancer.domain.quotas import ComputeQuota
from rebalancer.errors import ApplyFailed, ConflictError, InvalidInput, RebalancerError, TransientError

SETTLED = frozenset({"Created", "Updated"})
RAW_FIELDS = ("VCpu", "MemoryInGiB")
NOT_FOUND_CODES = frozenset({"ResourceNotFound", "ResourceNotFoundException"})


def is_failed(status: str | None) -> bool:
    return bool(status) and str(status).endswith("Failed")


# Every *Failed status of SchedulerResourceStatus, and what it leaves behind (what a person or the rollback faces).
FAILED_MEANS = {
    "CreateFailed": "SageMaker could not create it",
    "CreateRollbackFailed": "the create failed and SageMaker could not undo it, so it may be partly in place",
    "UpdateFailed": "SageMaker kept the previous configuration",
    "UpdateRollbackFailed": "the update failed and SageMaker could not restore the previous configuration, so it "
                            "may be partly applied",
    "DeleteFailed": "it still exists",
    "DeleteRollbackFailed": "the delete failed and SageMaker could not restore it, so it may be partly removed",
}


def failed_message(what: str, status: str, reason: str | None) -> str:
    """`quota q-1 of team a ended in UpdateRollbackFailed (…): reason`: one line, the status explained."""
    means = FAILED_MEANS.get(status, "a failure status")
    return f"{what} ended in {status} ({means}): {reason or 'no FailureReason given'}"


@dataclass(frozen=True, slots=True)
class Poller:
    """How long to wait for a quota to settle. Tests inject `sleep` and `clock`; nothing here sleeps for real."""

    sleep: Callable[[float], None] = time.sleep
    clock: Callable[[], float] = time.monotonic
    interval: float = 5.0
    timeout: float = 900.0
    capacity_fresh: float = 30.0  # a reading of the nodes older than this is taken again before a raising write


@dataclass(frozen=True, slots=True)
class Step:
    team: str
    operation: WriteOperation
    parameters: dict[str, Any]
    quota_id: str | None
    increases: bool
    after: ComputeQuota | None = None  # the quota once written (None: deleted)


class HealthyCapacity(Protocol):
    """rebalancer.adapters.sagemaker.healthy.NodeCapacity."""

    def healthy(self, cluster: str) -> dict[str, float]: ...


def _amounts(quota: ComputeQuota | None) -> dict[tuple[str, str | None, str], float]:
    """What a quota holds per pool (in the pool's unit) and the raw vCPU / memory figures, for ordering."""
    if quota is None or quota.ActivationState == "Disabled":
        return {}
    out: dict[tuple[str, str | None, str], float] = {}
    for r in quota.ComputeQuotaConfig.ComputeQuotaResources:
        profile = r.AcceleratorPartition.Type if r.AcceleratorPartition else None
        out[(r.InstanceType, profile, "primary")] = held(quota, PoolKey(instance_type=r.InstanceType,
                                                                          mig_profile=profile))
        for f in RAW_FIELDS:
            value = getattr(r, f)
            if value is not None:
                out[(r.InstanceType, profile, f)] = float(value)
    return out


def raises_any(before: ComputeQuota | None, after: ComputeQuota | None) -> bool:
    a, b = _amounts(before), _amounts(after)
    return any(v > a.get(k, 0.0) + 1e-9 for k, v in b.items())


def _created(parameters: dict[str, Any]) -> ComputeQuota:
    return ComputeQuota.model_validate({
        "ComputeQuotaId": "(new)", "Name": parameters.get("Name", "(new)"), "ComputeQuotaVersion": 0,
        "Status": "Creating", "ComputeQuotaTarget": parameters["ComputeQuotaTarget"],
        "ComputeQuotaConfig": parameters.get("ComputeQuotaConfig", {}),
        "ActivationState": parameters.get("ActivationState", "Enabled")})


def same_state(a: ComputeQuota, b: ComputeQuota) -> bool:
    return (a.ComputeQuotaConfig.to_api() == b.ComputeQuotaConfig.to_api()
            and a.ComputeQuotaTarget.to_api() == b.ComputeQuotaTarget.to_api()
            and (a.ActivationState or "Enabled") == (b.ActivationState or "Enabled"))


class _CreatedUnread(RebalancerError):
    """A quota was created but its version could not be read; its outcome is already recorded."""


class _SettleFailed(Exception):
    def __init__(self, quota_id: str, quota: ComputeQuota):
        self.quota_id = quota_id
        self.quota = quota
        super().__init__(failed_message(f"quota {quota_id} of team {quota.team}", quota.Status,
                                        getattr(quota, "FailureReason", None)))


@dataclass(slots=True)
class _Run:
    """State of one pass over a list of steps."""

    guard: Guard | None = None  # the capacity check, read before the first write when any step raises a quota
    capacity_read_at: float | None = None  # poller clock when the nodes were last read; None: stale (a wait since)
    outcomes: list[ChangeOutcome] = field(default_factory=list)
    index_of: dict[str, int] = field(default_factory=dict)  # quota id → its latest outcome
    versions: dict[str, int] = field(default_factory=dict)  # quota id → the version our last write produced
    created: list[str] = field(default_factory=list)  # quotas this run created (rollback deletes them)
    unsettled: set[str] = field(default_factory=set)
    decrease_in_flight: bool = False  # an unsettled write lowered a quota: increases wait for it
    error: str | None = None
    conflict: bool = False
    transient: bool = False  # the error was throttling / 5xx / a status still in progress: worth a later retry


class QuotaWriter:
    def __init__(self, sagemaker: Any, poller: Poller | None = None, reader: QuotaReader | None = None,
                 capacity: HealthyCapacity | None = None):
        self.sm = sagemaker
        self.poller = poller or Poller()
        self.reader = reader or QuotaReader(sagemaker)
        self.capacity = capacity or NodeCapacity(sagemaker)

    # ---- apply ---------------------------------------------------------------------------------------------

    def apply(self, cluster_arn: str, requests: Sequence[QuotaRequest], before: Sequence[ComputeQuota], *,
              rollback_on_failure: bool = True, ceilings: Mapping[str, float] | None = None) -> ApplyReport:
        """Run `requests` (a plan's, already ordered) against the quotas as they were read (`before`).
        `ceilings`: per instance type, what the autoscaler lets the quotas reach, as the plan read it."""
        current: dict[str, ComputeQuota] = {q.ComputeQuotaId: q for q in before}
        steps: list[Step] = []
        for r in requests:
            qid = r.parameters.get("ComputeQuotaId")
            if r.operation == "CreateComputeQuota":
                new = _created(r.parameters)
                steps.append(Step(r.team, r.operation, dict(r.parameters), None, raises_any(None, new), new))
                continue
            was = current.get(qid) if isinstance(qid, str) else None
            if was is None:
                raise ApplyFailed(f"UpdateComputeQuota for team {r.team}: quota {qid} is not among the quotas read "
                                  "for this plan; re-read the cluster and plan again")
            after = was.updated(r.parameters)
            steps.append(Step(r.team, r.operation, dict(r.parameters), was.ComputeQuotaId, raises_any(was, after),
                              after))
            current[was.ComputeQuotaId] = after
        run = self._execute(steps, cluster_arn, ceilings or {}, stop_on_refusal=True)
        report = ApplyReport(cluster_arn=cluster_arn, outcomes=tuple(run.outcomes), succeeded=run.error is None,
                             error=run.error, conflict=run.conflict, transient=run.transient)
        if run.error is None or not (run.versions or run.created) or not rollback_on_failure:
            return report
        before_by_id = {q.ComputeQuotaId: q for q in before}
        written = [qid for qid in run.versions if qid in before_by_id]
        created = list(run.created)
        undo = self.rollback(cluster_arn, [before_by_id[q] for q in written], created_ids=created,
                             expected_versions=run.versions, ceilings=ceilings)
        return report.model_copy(update={"rollback": undo.outcomes, "rolled_back": undo.succeeded})

    def guard(self, cluster_arn: str, ceilings: Mapping[str, float]) -> Guard:
        """The cluster's quotas and healthy capacity, read now."""
        return Guard.of(self.reader.quotas(cluster_arn), limits(self.capacity.healthy(cluster_arn), ceilings))

    def _start(self, steps: Sequence[Step], cluster_arn: str, ceilings: Mapping[str, float]) -> _Run:
        """A pass over `steps`, with the capacity guard read now when one of them raises a quota. A failed read
        stops it before any write."""
        run = _Run()
        try:
            run.guard = self.guard(cluster_arn, ceilings) if any(s.increases for s in steps) else None
            run.capacity_read_at = self.poller.clock()
        except RebalancerError as e:
            run.error = f"reading the cluster's capacity before writing: {e}"
            run.transient = isinstance(e, TransientError)
            run.outcomes += [_not_attempted(s) for s in steps]
        return run

    def _fresh_capacity(self, run: _Run, step: Step, cluster_arn: str, ceilings: Mapping[str, float]) -> bool:
        """Before a raising write: the nodes read again unless the last reading is fresh (no wait since, younger
        than `capacity_fresh`). False, with the error set, when that read fails."""
        assert run.guard is not None
        now = self.poller.clock()
        if run.capacity_read_at is not None and now - run.capacity_read_at < self.poller.capacity_fresh:
            return True
        try:
            run.guard.read_again(limits(self.capacity.healthy(cluster_arn), ceilings))
        except RebalancerError as e:
            run.error = f"reading the cluster's capacity again before {step.operation} for team {step.team}: {e}"
            run.transient = isinstance(e, TransientError)
            return False
        run.capacity_read_at = self.poller.clock()
        return True

    def _execute(self, steps: Sequence[Step], cluster_arn: str, ceilings: Mapping[str, float], *,
                 stop_on_refusal: bool) -> _Run:
        """The steps in order. A step the capacity guard refuses stops the pass (`stop_on_refusal`, an apply) or is
        left out (a rollback: the rest still fits)."""
        run = self._start(steps, cluster_arn, ceilings)
        if run.error is not None:
            return run
        for i, step in enumerate(steps):
            needs_settled = (step.increases and run.decrease_in_flight) or step.quota_id in run.unsettled
            if needs_settled and not self._settle_all(run):
                run.outcomes += [_not_attempted(s) for s in steps[i:]]
                return run
            if run.guard and step.increases and not self._fresh_capacity(run, step, cluster_arn, ceilings):
                run.outcomes += [_not_attempted(s) for s in steps[i:]]
                self._settle_all(run, keep_error=True)
                return run
            refused = run.guard.refusal(step.quota_id, step.after) if run.guard and step.increases else None
            if refused is not None and not stop_on_refusal:
                run.outcomes.append(_outcome(step, "refused", message=f"left as it is: {refused}"))
                continue
            if refused is not None:
                run.error = (f"{step.operation} for team {step.team} refused: {refused}; stopped (the cluster "
                             "changed since the plan was made: plan again)")
                run.outcomes += [_outcome(step, "refused", message=refused), *map(_not_attempted, steps[i + 1:])]
                self._settle_all(run, keep_error=True)
                return run
            if self._stale_target(step, run, steps[i + 1:]) or not self._write_step(step, run, steps[i + 1:]):
                return run
        self._settle_all(run)
        return run

    @staticmethod
    def _stale_target(step: Step, run: _Run, rest: Sequence[Step]) -> bool:
        """A step whose TargetVersion is not the version our own previous write produced stops the pass as a
        conflict (True)."""
        expected = run.versions.get(step.quota_id or "")
        target = step.parameters.get("TargetVersion")
        if expected is None or target is None or target == expected:
            return False
        run.error = (f"{step.operation} on quota {step.quota_id} of team {step.team}: the plan expects "
                     f"version {target} but our previous write produced version {expected}; stopped")
        run.conflict = True
        run.outcomes.append(_outcome(step, "conflict", message=run.error))
        run.outcomes += [_not_attempted(s) for s in rest]
        return True

    def _write_step(self, step: Step, run: _Run, rest: Sequence[Step]) -> bool:
        """One write; a write that fails is recorded, the rest marked not attempted and what was written settled
        (False)."""
        try:
            self._write(step, run)
        except ConflictError as e:
            run.conflict = True
            run.error = self._conflict_report(step, str(e))
            run.outcomes.append(_outcome(step, "conflict", message=run.error))
            run.outcomes += [_not_attempted(s) for s in rest]
            return False
        except RebalancerError as e:
            run.error = str(e)
            run.transient = isinstance(e, TransientError)
            if not isinstance(e, _CreatedUnread):
                run.outcomes.append(_outcome(step, "failed", message=str(e)))
            run.outcomes += [_not_attempted(s) for s in rest]
            self._settle_all(run, keep_error=True)
            return False
        return True

    def _write(self, step: Step, run: _Run) -> None:
        resource = f"quota {step.quota_id} of team {step.team}" if step.quota_id else f"team {step.team}"
        version: int | None
        with aws_call(step.operation, resource):
            if step.operation == "UpdateComputeQuota":
                out = self.sm.update_compute_quota(**step.parameters)
                qid, version = str(step.quota_id), int(out["ComputeQuotaVersion"])
            elif step.operation == "CreateComputeQuota":
                out = self.sm.create_compute_quota(**step.parameters)
                qid, version = str(out["ComputeQuotaId"]), None
            else:
                self.sm.delete_compute_quota(**step.parameters)
                qid, version = str(step.quota_id), None
        if step.operation == "CreateComputeQuota":
            run.created.append(qid)
            version = self._created_version(step, qid, run)
        if version is not None:
            run.versions[qid] = version
        if run.guard is not None:
            run.guard.wrote(qid, step.after)
        run.unsettled.add(qid)
        run.decrease_in_flight |= not step.increases
        run.index_of[qid] = len(run.outcomes)
        run.outcomes.append(_outcome(step, "applied", quota_id=qid, version=version))

    def _created_version(self, step: Step, quota_id: str, run: _Run) -> int:
        """CreateComputeQuota answers with the id only: the version comes from a Describe, never assumed. If that
        read fails the quota exists all the same: it is recorded as ours (rollback deletes it) and the step fails."""
        try:
            return self.reader.quota(quota_id).ComputeQuotaVersion
        except RebalancerError as e:
            run.index_of[quota_id] = len(run.outcomes)
            run.outcomes.append(_outcome(step, "failed", quota_id=quota_id,
                                         message=f"created, but reading its version failed: {e}"))
            raise _CreatedUnread(f"CreateComputeQuota for team {step.team}: quota {quota_id} was created but reading "
                                 f"its version failed: {e}") from e

    def _conflict_report(self, step: Step, aws_said: str) -> str:
        read = step.parameters.get("TargetVersion")
        try:
            now = self.reader.quota(str(step.quota_id))
        except RebalancerError as e:
            return f"{aws_said}; re-reading it failed too ({e}); stopped, nothing overwritten"
        who = getattr(now, "LastModifiedBy", None) or {}
        by = who.get("UserProfileName") or who.get("IamIdentity", {}).get("Arn") if isinstance(who, dict) else None
        when = f" at {now.LastModifiedTime:%Y-%m-%d %H:%M:%S}" if now.LastModifiedTime else ""
        return (f"quota {step.quota_id} of team {step.team} was changed by someone else{' (' + by + ')' if by else ''}"
                f"{when}: we read version {read}, it is now version {now.ComputeQuotaVersion} ({now.Status}). "
                "Stopped without overwriting it; re-read the cluster and plan again")

    # ---- settle / verify -----------------------------------------------------------------------------------

    def _settle_all(self, run: _Run, keep_error: bool = False) -> bool:
        """Wait for every unsettled write; mark outcomes with the final status. False if one failed."""
        if not run.unsettled:
            return run.error is None
        run.capacity_read_at = None  # nodes may fail while we wait
        try:
            settled = self.wait(run.unsettled)
        except _SettleFailed as f:
            i = run.index_of[f.quota_id]
            run.outcomes[i] = run.outcomes[i].model_copy(update={"result": "failed", "status": f.quota.Status,
                                                                 "message": str(f)})
            run.unsettled.discard(f.quota_id)
            if not keep_error:
                run.error = str(f)
            self._settle_all(run, keep_error=True)  # the others still get their final status
            return False
        except TransientError as e:
            if not keep_error:
                run.error = str(e)
                run.transient = True
            return False
        for qid, status in settled.items():
            i = run.index_of[qid]
            run.outcomes[i] = run.outcomes[i].model_copy(update={"status": status})
        run.unsettled.clear()
        run.decrease_in_flight = False
        return run.error is None

    def _status(self, quota_id: str) -> tuple[str, ComputeQuota | None]:
        try:
            q = self.reader.quota(quota_id)
        except RebalancerError as e:
            cause = e.__cause__
            if isinstance(cause, ClientError) and error_code(cause) in NOT_FOUND_CODES:
                return "Deleted", None
            raise
        return q.Status, q

    def wait(self, quota_ids: Iterable[str]) -> dict[str, str]:
        """Poll until every quota is Created / Updated (or deleted). Raises _SettleFailed for a *Failed status and
        TransientError when the bound is reached."""
        pending = set(quota_ids)
        done: dict[str, str] = {}
        deadline = self.poller.clock() + self.poller.timeout
        while True:
            for qid in sorted(pending):
                status, quota = self._status(qid)
                if status in SETTLED or status == "Deleted":
                    done[qid] = status
                elif is_failed(status) and quota is not None:
                    raise _SettleFailed(qid, quota)
            pending -= set(done)
            if not pending:
                return done
            if self.poller.clock() >= deadline:
                raise TransientError(f"DescribeComputeQuota: quotas {', '.join(sorted(pending))} have not settled "
                                     f"after {self.poller.timeout:g} s")
            self.poller.sleep(self.poller.interval)

    def verify(self, quota_ids: Iterable[str]) -> dict[str, str]:
        """For a Verify step: wait until the quotas settle. ApplyFailed names a quota that ended in *Failed;
        TransientError means they are still in progress (the state machine retries)."""
        try:
            return self.wait(quota_ids)
        except _SettleFailed as f:
            raise ApplyFailed(str(f)) from None

    # ---- rollback ------------------------------------------------------------------------------------------

    def rollback(self, cluster_arn: str, before: Sequence[ComputeQuota], *, created_ids: Sequence[str] = (),
                 expected_versions: dict[str, int] | None = None,
                 ceilings: Mapping[str, float] | None = None) -> ApplyReport:
        """Restore each quota in `before` to that state with a fresh version, and delete `created_ids`; decreases
        first. With `expected_versions` (what our writes produced), a quota someone changed since is left alone; so is
        one whose restore would raise an instance type above its healthy capacity (`ceilings`: the autoscaler's
        reach, as the run's plan read it). Each quota's outcome says what it held when read (`held`) and holds after
        (`holds`), per pool, where known."""
        skipped: list[ChangeOutcome] = []
        decreases: list[Step] = []
        increases: list[Step] = []
        read: dict[str, ComputeQuota] = {}  # quota id → as read now
        for qid in created_ids:
            decreases.append(Step("(created)", "DeleteComputeQuota", {"ComputeQuotaId": qid}, qid, False))
        for b in before:
            step = self._restore_step(b, (expected_versions or {}).get(b.ComputeQuotaId), read, skipped)
            if step is not None:
                (increases if step.increases else decreases).append(step)
        steps = [*decreases, *increases]
        run = self._execute(steps, cluster_arn, ceilings or {}, stop_on_refusal=False)
        after_of = {s.quota_id: s.after for s in steps if s.quota_id}
        outcomes = tuple(_with_holdings(o, read.get(o.quota_id or ""), after_of.get(o.quota_id or ""))
                         for o in (*skipped, *run.outcomes))
        ok = run.error is None and all(o.result in ("applied", "unchanged") for o in outcomes)
        return ApplyReport(cluster_arn=cluster_arn, outcomes=outcomes, succeeded=ok, error=run.error,
                           conflict=run.conflict or any(o.result == "conflict" for o in outcomes),
                           transient=run.transient)

    def _restore_step(self, b: ComputeQuota, expected: int | None, read: dict[str, ComputeQuota],
                      skipped: list[ChangeOutcome]) -> Step | None:
        """The write that puts quota `b` back, read now (into `read`); None, with the reason in `skipped`, when it
        cannot be read, is gone, was changed by someone else since our write (`expected`: its version then), or
        is already as `b`."""
        qid = b.ComputeQuotaId
        try:
            status, now = self._status(qid)
        except RebalancerError as e:
            skipped.append(ChangeOutcome(team=b.team, operation="UpdateComputeQuota", quota_id=qid,
                                         result="failed", message=str(e)))
            return None
        if now is None:
            skipped.append(ChangeOutcome(team=b.team, operation="UpdateComputeQuota", quota_id=qid,
                                         result="failed", status=status, holds={},
                                         message="the quota no longer exists; not recreated"))
            return None
        read[qid] = now
        if expected is not None and now.ComputeQuotaVersion != expected:
            skipped.append(ChangeOutcome(
                team=b.team, operation="UpdateComputeQuota", quota_id=qid, result="conflict", status=status,
                message=f"changed by someone else after our write (our version {expected}, now "
                        f"{now.ComputeQuotaVersion}); left as it is"))
            return None
        if same_state(now, b) and not is_failed(status):
            skipped.append(ChangeOutcome(team=b.team, operation="UpdateComputeQuota", quota_id=qid,
                                         result="unchanged", status=status))
            return None
        params: dict[str, Any] = {"ComputeQuotaId": qid, "TargetVersion": now.ComputeQuotaVersion,
                                  "ComputeQuotaConfig": b.ComputeQuotaConfig.to_api(),
                                  "ComputeQuotaTarget": b.ComputeQuotaTarget.to_api()}
        if b.ActivationState:
            params["ActivationState"] = b.ActivationState
        after = now.updated(params)
        return Step(b.team, "UpdateComputeQuota", params, qid, raises_any(now, after), after)

def _holdings(quota: ComputeQuota | None) -> dict[str, float] | None:
    """Per pool what the quota holds (nothing when disabled or deleted); None when a type is not known."""
    if quota is None or quota.ActivationState == "Disabled":
        return {}
    try:
        return holdings(quota)
    except InvalidInput:
        return None


def _with_holdings(o: ChangeOutcome, read: ComputeQuota | None, written: ComputeQuota | None) -> ChangeOutcome:
    """The outcome with what the quota held when the rollback read it, and what it holds after: what was written
    if the write was made, else what was read (a quota left alone keeps it). A deleted quota holds nothing."""
    update: dict[str, Any] = {}
    if read is not None:
        update["held"] = _holdings(read)
    if o.result == "applied":
        update["holds"] = {} if o.operation == "DeleteComputeQuota" else _holdings(written)
    elif read is not None and o.holds is None:
        update["holds"] = _holdings(read)
    return o.model_copy(update=update) if update else o


def _outcome(step: Step, result: str, *, quota_id: str | None = None, version: int | None = None,
             message: str = "") -> ChangeOutcome:
    return ChangeOutcome.model_validate({
        "team": step.team, "operation": step.operation, "quota_id": quota_id or step.quota_id, "result": result,
        "target_version": step.parameters.get("TargetVersion"), "version": version, "message": message})


def _not_attempted(step: Step) -> ChangeOutcome:
    return _outcome(step, "not-attempted")


def raise_for_report(report: ApplyReport) -> None:
    """For the Lambdas and the CLI: a failed apply becomes ConflictError, TransientError (throttling / 5xx and
    nothing left half-done: safe to run again later) or ApplyFailed. The state machine matches on the names."""
    if report.succeeded:
        return
    message = report.error or "apply failed"
    if report.rolled_back is not None:
        message += "; rolled back" if report.rolled_back else "; ROLLBACK INCOMPLETE"
    if report.conflict:
        raise ConflictError(message)
    if report.transient and report.rolled_back is not False:
        raise TransientError(message)
    raise ApplyFailed(message)
