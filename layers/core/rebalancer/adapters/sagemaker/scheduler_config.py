"""Reading and writing a cluster's scheduler config (priority classes, fair share, idle-resource sharing).

Same rules as the quota writer: the update carries the TargetVersion read; a ConflictException means someone else
changed the config since, so we re-read, stop and report both versions (never retry with the new version); the
write is polled (injected sleep and clock, bounded) until Created / Updated; errors are one line of the right kind.
"""

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from rebalancer.adapters.aws import aws_call
from rebalancer.adapters.sagemaker.quota_writer import SETTLED, Poller, failed_message, is_failed
from rebalancer.adapters.sagemaker.quotas import SchedulerConfigReader
from rebalancer.domain.plan import SchedulerRequest
from rebalancer.domain.quotas import ClusterSchedulerConfig
from rebalancer.errors import ApplyFailed, ConflictError, RebalancerError, TransientError

SchedulerWrite = Literal["CreateClusterSchedulerConfig", "UpdateClusterSchedulerConfig",
                         "DeleteClusterSchedulerConfig"]


class SchedulerOutcome(BaseModel):
    """What one scheduler-config write (or its rollback) did; stored for the Rollback step, shown in the audit."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    operation: SchedulerWrite
    config_id: str | None = None
    result: Literal["applied", "failed", "conflict", "unchanged"]
    target_version: int | None = None
    version: int | None = None  # the version our write produced
    status: str | None = None
    message: str = ""

    def line(self) -> str:
        where = f"scheduler config {self.config_id}" if self.config_id else "scheduler config"
        versions = f" v{self.target_version}→v{self.version}" if self.version is not None else ""
        status = f" [{self.status}]" if self.status else ""
        tail = f": {self.message}" if self.message else ""
        return f"{self.result:<13} {self.operation} {where}{versions}{status}{tail}"


class SchedulerConfigClient(SchedulerConfigReader):
    def __init__(self, sagemaker: Any, poller: Poller | None = None):
        super().__init__(sagemaker)
        self.poller = poller or Poller()

    def apply(self, request: SchedulerRequest) -> ClusterSchedulerConfig:
        """Run one planned request and wait until it settles. ConflictError when the config changed since it was
        read (nothing overwritten); ApplyFailed when it ended in *Failed; TransientError when it did not settle."""
        config_id, _version = self.write(request)
        return self.wait(config_id)

    def write(self, request: SchedulerRequest) -> tuple[str, int | None]:
        """Send one planned request without waiting: (config id, the version it produced when the API says)."""
        params = request.parameters
        if request.operation == "CreateClusterSchedulerConfig":
            with aws_call(request.operation, f"cluster {params.get('ClusterArn')}"):
                out = self.sm.create_cluster_scheduler_config(**params)
            config_id = str(out["ClusterSchedulerConfigId"])
            # The response has the id only: the version comes from a Describe, never assumed. Unreadable ⇒ None
            # (the Rollback step then leaves the config alone rather than guess which version is ours).
            try:
                return config_id, self.describe(config_id).ClusterSchedulerConfigVersion
            except RebalancerError:
                return config_id, None
        config_id = str(params["ClusterSchedulerConfigId"])
        try:
            with aws_call(request.operation, f"scheduler config {config_id}"):
                out = self.sm.update_cluster_scheduler_config(**params)
        except ConflictError as e:
            raise ConflictError(self._conflict_report(config_id, params.get("TargetVersion"), str(e))) from e
        version = out.get("ClusterSchedulerConfigVersion")
        return config_id, None if version is None else int(version)

    def restore(self, config_id: str, before: ClusterSchedulerConfig | None, our_version: int | None
                ) -> SchedulerOutcome:
        """Undo our write: the config back to `before` with a fresh TargetVersion, or deleted when we created it
        (`before` None). A config at another version than `our_version` was edited after our write: left alone."""
        operation: SchedulerWrite = "DeleteClusterSchedulerConfig" if before is None else \
            "UpdateClusterSchedulerConfig"
        try:
            now = self.describe(config_id)
        except RebalancerError as e:
            return SchedulerOutcome(operation=operation, config_id=config_id, result="failed", message=str(e))
        if our_version is not None and now.ClusterSchedulerConfigVersion != our_version:
            return SchedulerOutcome(
                operation=operation, config_id=config_id, result="conflict", status=now.Status,
                message=f"changed by someone else after our write (our version {our_version}, now "
                        f"{now.ClusterSchedulerConfigVersion}); left as it is")
        if before is not None and dict(now.SchedulerConfig) == dict(before.SchedulerConfig) \
                and not is_failed(now.Status):
            return SchedulerOutcome(operation=operation, config_id=config_id, result="unchanged", status=now.Status)
        target = now.ClusterSchedulerConfigVersion
        try:
            if before is None:
                with aws_call(operation, f"scheduler config {config_id}"):
                    self.sm.delete_cluster_scheduler_config(ClusterSchedulerConfigId=config_id)
                return SchedulerOutcome(operation=operation, config_id=config_id, result="applied",
                                        target_version=target)
            self.write(SchedulerRequest(operation="UpdateClusterSchedulerConfig", parameters={
                "ClusterSchedulerConfigId": config_id, "TargetVersion": target,
                "SchedulerConfig": dict(before.SchedulerConfig)}))
            settled = self.wait(config_id)
        except ConflictError as e:
            return SchedulerOutcome(operation=operation, config_id=config_id, result="conflict",
                                    target_version=target, message=str(e))
        except RebalancerError as e:
            return SchedulerOutcome(operation=operation, config_id=config_id, result="failed",
                                    target_version=target, message=str(e))
        return SchedulerOutcome(operation=operation, config_id=config_id, result="applied", target_version=target,
                                version=settled.ClusterSchedulerConfigVersion, status=settled.Status)

    def _conflict_report(self, config_id: str, read: object, aws_said: str) -> str:
        try:
            now = self.describe(config_id)
        except RebalancerError as e:
            return f"{aws_said}; re-reading it failed too ({e}); stopped, nothing overwritten"
        return (f"scheduler config {config_id} was changed by someone else: we read version {read}, it is now "
                f"version {now.ClusterSchedulerConfigVersion} ({now.Status}). Stopped without overwriting it; "
                "re-read the cluster and plan again")

    def wait(self, config_id: str) -> ClusterSchedulerConfig:
        deadline = self.poller.clock() + self.poller.timeout
        while True:
            config = self.describe(config_id)
            if config.Status in SETTLED:
                return config
            if is_failed(config.Status):
                raise ApplyFailed(failed_message(f"scheduler config {config_id}", config.Status,
                                                 getattr(config, "FailureReason", None)))
            if self.poller.clock() >= deadline:
                raise TransientError(f"DescribeClusterSchedulerConfig: {config_id} has not settled after "
                                     f"{self.poller.timeout:g} s")
            self.poller.sleep(self.poller.interval)
