"""A rebalance run of one cluster, as the use cases both entry points call: the workflow's Lambda steps
(`app.workflow.steps`) and the CLI (`rebalancer apply / rollback / history`). Each records what it did in the run log
(the controller's table: artifacts, audit records (shaped by `app.workflow.audit`), the versions our writes left). The
plan use case is `app.workflow.run_plan` (apart, so that the steps that write never load the planner).

- apply: the scheduler config first, then the quotas (each with the TargetVersion read), one audit record, and on
  success the versions the writes left, so the next plan takes them for ours;
- rollback: only what this run wrote, back to the snapshot's state; the scheduler config too, unless someone
  edited it after our write;
- restore: the quotas of a saved snapshot (the CLI's `rollback --to`), recorded like a rollback;
- history: the audit records of a cluster and the snapshot a run started from.
Every quota write passes the writer's capacity guard (no instance type raised above the healthy capacity read just
before, rebalancer.domain.healthy), with the autoscaler's reach the run's plan read; a rollback's record says, per
quota, what it held before and holds after, and which quotas it left as they were and why.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from rebalancer.adapters.sagemaker.outcomes import ApplyReport
from rebalancer.adapters.sagemaker.scheduler_config import SchedulerOutcome
from rebalancer.app.workflow import audit
from rebalancer.app.workflow.state import Artifacts, RunRef, Started, load_plan, load_started
from rebalancer.app.workflow.stored_basis import ceilings
from rebalancer.domain.plan import CLUSTER, QuotaRequest, SchedulerRequest
from rebalancer.domain.quotas import ClusterSchedulerConfig, ComputeQuota
from rebalancer.errors import ApplyFailed, ConflictError, PermanentError, RebalancerError


class Writer(Protocol):
    """rebalancer.adapters.sagemaker.quota_writer.QuotaWriter."""

    def apply(self, cluster_arn: str, requests: Sequence[QuotaRequest], before: Sequence[ComputeQuota], *,
              rollback_on_failure: bool = True, ceilings: Mapping[str, float] | None = None) -> ApplyReport: ...

    def verify(self, quota_ids: Iterable[str]) -> dict[str, str]: ...

    def rollback(self, cluster_arn: str, before: Sequence[ComputeQuota], *, created_ids: Sequence[str] = (),
                 expected_versions: dict[str, int] | None = None,
                 ceilings: Mapping[str, float] | None = None) -> ApplyReport: ...


class SchedulerConfigs(Protocol):
    """rebalancer.adapters.sagemaker.scheduler_config.SchedulerConfigClient."""

    def write(self, request: SchedulerRequest) -> tuple[str, int | None]: ...

    def wait(self, config_id: str) -> ClusterSchedulerConfig: ...

    def restore(self, config_id: str, before: ClusterSchedulerConfig | None,
                our_version: int | None) -> SchedulerOutcome: ...


class Versions(Protocol):
    """Per team (or `(cluster)` for the scheduler config) the version our last applied write produced:
    rebalancer.adapters.dynamodb.versions; rebalancer_tools.fakes.memory_store.MemoryVersions."""

    def record(self, cluster_name: str, versions: dict[str, int], execution: str) -> None: ...
    def known(self, cluster_name: str) -> dict[str, int]: ...


class RecordsAndVersions(audit.Records, Protocol):
    """What a run's use cases record in: its documents, the audit log, the versions our writes left."""

    @property
    def versions(self) -> Versions: ...


# --- the run's documents -----------------------------------------------------------------------------------------
def load_report(artifacts: Artifacts, run: RunRef) -> ApplyReport | None:
    doc = artifacts.get(run.execution_name, "APPLY")
    return None if doc is None else ApplyReport.model_validate(doc)


def load_scheduler(artifacts: Artifacts, run: RunRef) -> SchedulerOutcome | None:
    doc = artifacts.get(run.execution_name, "SCHEDULER")
    return None if doc is None else SchedulerOutcome.model_validate(doc)


def written_versions(report: ApplyReport) -> dict[str, int]:
    """team → the version our last applied write of its quota produced."""
    out: dict[str, int] = {}
    for o in report.outcomes:
        if o.result == "applied" and o.version is not None:
            out[o.team] = o.version
    return out


# --- apply -------------------------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Applied:
    report: ApplyReport
    scheduler: SchedulerOutcome | None
    versions: dict[str, int]  # team (or `(cluster)`) → the version our writes left

    def lines(self) -> list[str]:
        return ([self.scheduler.line()] if self.scheduler else []) + [o.line() for o in self.report.outcomes]


def apply_scheduler(run: RunRef, requests: Sequence[SchedulerRequest], *, artifacts: Artifacts,
                    configs: SchedulerConfigs) -> SchedulerOutcome | None:
    """The plan's scheduler-config request (at most one), before any quota. The outcome is stored as soon as the
    write is accepted, so a rollback knows what to undo even when the config then fails to settle."""
    if not requests:
        return None
    request = requests[0]
    target = request.parameters.get("TargetVersion")
    try:
        config_id, version = configs.write(request)
    except RebalancerError as e:  # nothing was written
        outcome = SchedulerOutcome(operation=request.operation, result="conflict" if isinstance(e, ConflictError)
                                   else "failed", config_id=request.parameters.get("ClusterSchedulerConfigId"),
                                   target_version=target, message=str(e))
        artifacts.put(run.execution_name, "SCHEDULER", outcome.model_dump(mode="json"))
        raise
    written = SchedulerOutcome(operation=request.operation, config_id=config_id, result="applied",
                               target_version=target, version=version)
    artifacts.put(run.execution_name, "SCHEDULER", written.model_dump(mode="json"))
    try:
        settled = configs.wait(config_id)
    except RebalancerError as e:
        failed = written.model_copy(update={"result": "failed", "message": str(e)})
        artifacts.put(run.execution_name, "SCHEDULER", failed.model_dump(mode="json"))
        # Something was written: a retry would only conflict with our own write; the rollback undoes it.
        raise ApplyFailed(str(e)) from None
    done = written.model_copy(update={"version": settled.ClusterSchedulerConfigVersion, "status": settled.Status})
    artifacts.put(run.execution_name, "SCHEDULER", done.model_dump(mode="json"))
    return done


def apply_run(run: RunRef, *, store: RecordsAndVersions, writer: Writer, configs: SchedulerConfigs | None = None,
              who: str | None = None) -> Applied:
    """Writes the run's plan: the scheduler config first, then the quotas (decreases first, waiting for each to
    settle before an increase). On failure the reports are stored for `rollback_run` and the error is raised
    (the state machine routes it by class name to Rollback; the CLI calls the rollback itself). On success the
    versions our writes left are recorded, so the next plan tells a console edit from our own change."""
    the_plan = load_plan(store.artifacts, run)
    started = load_started(store.artifacts, run)
    if the_plan.scheduler_requests and configs is None:
        raise PermanentError("the plan changes the scheduler config but no scheduler-config client was given")
    try:
        scheduler = apply_scheduler(run, the_plan.scheduler_requests, artifacts=store.artifacts,
                                    configs=configs) if configs else None
    except RebalancerError as e:
        # No quota was written: the rollback finds an empty report and undoes only the scheduler config.
        empty = ApplyReport(cluster_arn=the_plan.cluster_arn, succeeded=False, error=str(e))
        store.artifacts.put(run.execution_name, "APPLY", empty.model_dump(mode="json"))
        audit.scheduler_failed(store.audit, run, the_plan,
                               (load_scheduler(store.artifacts, run) or _no_outcome()).line(), str(e), who=who)
        raise
    report = writer.apply(the_plan.cluster_arn, the_plan.requests, started.quotas, rollback_on_failure=False,
                          ceilings=ceilings(store.artifacts, run))
    store.artifacts.put(run.execution_name, "APPLY", report.model_dump(mode="json"))
    versions = written_versions(report)
    if scheduler is not None and scheduler.version is not None:
        versions[CLUSTER] = scheduler.version
    audit.applied(store.audit, run, the_plan, report, scheduler, versions=versions, who=who)
    if not report.succeeded:
        raise ApplyFailed(report.error or "apply failed")
    store.versions.record(run.cluster_name, versions, run.execution_name)
    return Applied(report, scheduler, versions)


def _no_outcome() -> SchedulerOutcome:
    return SchedulerOutcome(operation="UpdateClusterSchedulerConfig", result="failed", message="not attempted")


# --- rollback ----------------------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class RolledBack:
    undo: ApplyReport
    scheduler: SchedulerOutcome | None

    @property
    def ok(self) -> bool:
        return self.undo.succeeded and (self.scheduler is None or self.scheduler.result in ("applied", "unchanged"))

    @property
    def did_anything(self) -> bool:
        return bool(self.undo.outcomes) or self.scheduler is not None

    def lines(self) -> list[str]:
        return ([self.scheduler.line()] if self.scheduler else []) + [o.line() for o in self.undo.outcomes]


def rollback_run(run: RunRef, error: Mapping[str, Any] | None, *, store: RecordsAndVersions, writer: Writer,
                 configs: SchedulerConfigs | None = None) -> RolledBack:
    """Restore what this run wrote to the snapshot's state: each quota it wrote (created ones are deleted), and
    the scheduler config if it wrote it. With the stored reports, a quota (or config) someone else changed after
    our write is left alone (and reported). Without a report (the apply never stored one), every quota the plan
    touched is restored."""
    the_plan = load_plan(store.artifacts, run)
    started = load_started(store.artifacts, run)
    report = load_report(store.artifacts, run)
    touched = {r.team for r in the_plan.requests}
    before = [q for q in started.quotas if q.team in touched]
    before_ids = {q.ComputeQuotaId for q in before}
    expected: dict[str, int] | None = None
    created: list[str] = []
    if report is not None:
        expected = {}
        for o in report.outcomes:
            if o.quota_id in before_ids and o.version is not None:
                expected[o.quota_id] = o.version
        # As the quota writer's own rollback: only what this run wrote is undone; a quota it never reached may
        # hold someone else's newer edit.
        before = [q for q in before if q.ComputeQuotaId in expected]
        # A create that then failed (CreateFailed, its version unreadable) still left a quota: delete it too.
        created = [o.quota_id for o in report.outcomes
                   if o.operation == "CreateComputeQuota" and o.result in ("applied", "failed") and o.quota_id]
    undo = writer.rollback(the_plan.cluster_arn, before, created_ids=created, expected_versions=expected or None,
                           ceilings=ceilings(store.artifacts, run))
    if report is not None:  # a deleted quota is named by the team the run created it for
        team_of = {o.quota_id: o.team for o in report.outcomes if o.operation == "CreateComputeQuota"}
        undo = undo.model_copy(update={"outcomes": tuple(
            o.model_copy(update={"team": team_of.get(o.quota_id or "", o.team)})
            if o.operation == "DeleteComputeQuota" else o for o in undo.outcomes)})
    done = RolledBack(undo, restore_scheduler(run, started, artifacts=store.artifacts, configs=configs))
    versions = written_versions(undo)
    config = done.scheduler
    if config is not None and config.result == "applied" and config.version is not None:
        versions[CLUSTER] = config.version
    audit.rolled_back(store.audit, run, the_plan, undo, ok=done.ok, cause=(error or {}).get("Error"),
                      scheduler_line=config.line() if config is not None else None)
    store.versions.record(run.cluster_name, versions, run.execution_name)
    return done


def restore_scheduler(run: RunRef, started: Started, *, artifacts: Artifacts,
                      configs: SchedulerConfigs | None) -> SchedulerOutcome | None:
    """Undo this run's scheduler-config write, if it made one: back to the snapshot's config with a fresh
    TargetVersion (deleted if we created it); left alone when someone edited it after our write."""
    written = load_scheduler(artifacts, run)
    if written is None or written.config_id is None or (written.result != "applied" and written.version is None):
        return None  # nothing was written (the request was refused, or there was none)
    if written.version is None:  # the API did not say which version our write made: we cannot tell ours apart
        return written.model_copy(update={"result": "conflict", "message": "the version our write produced is "
                                          "unknown, so a later edit cannot be told apart; left as it is"})
    if configs is None:
        raise PermanentError("the run wrote the scheduler config but no scheduler-config client was given")
    before = started.scheduler_config if written.operation == "UpdateClusterSchedulerConfig" else None
    return configs.restore(written.config_id, before, written.version)


def restore_quotas(run: RunRef, cluster_arn: str, target: Sequence[ComputeQuota],
                   current: Mapping[str, ComputeQuota], *, store: RecordsAndVersions, writer: Writer,
                   who: str | None = None, detail: Mapping[str, Any] | None = None) -> ApplyReport:
    """The quotas of a saved snapshot (`target`) put back, with fresh versions, decreases first; a quota whose
    version is no longer the one in `current` (what was shown before asking) was edited since: left alone; so is
    one whose restore would raise an instance type above its healthy capacity now. One rollback record, and the
    versions the writes left."""
    shown = {qid: q.ComputeQuotaVersion for qid, q in current.items()}
    report = writer.rollback(cluster_arn, target, expected_versions=shown)
    audit.restored(store.audit, run, report, ok=report.succeeded, who=who, detail=detail)
    store.versions.record(run.cluster_name, written_versions(report), run.execution_name)
    return report


# --- history -----------------------------------------------------------------------------------------------------
def history(store: audit.Records, cluster_name: str) -> list[dict[str, Any]]:
    """Every audit record of the cluster, oldest first: the workflow's runs and the CLI's alike."""
    return store.audit.records(cluster_name)


def started_from(store: audit.Records, execution: str) -> dict[str, Any] | None:
    """The snapshot a run started from (the state `restore_quotas` can put back), as stored."""
    doc = store.artifacts.get(execution, "SNAPSHOT")
    return None if doc is None else dict(doc)


def planned_with(store: audit.Records, execution: str) -> dict[str, Any] | None:
    """The planning context a run's plan was made with (rebalancer.domain.recorded_context), as stored."""
    doc = store.artifacts.get(execution, "CONTEXT")
    return None if doc is None else dict(doc)
