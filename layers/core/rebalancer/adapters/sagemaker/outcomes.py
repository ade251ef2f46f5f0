"""What applying (or rolling back) a change set did, call by call. Pure models: the CLI prints them, the Lambdas
return them to the state machine, the audit log stores them."""

from typing import Literal

from pydantic import BaseModel, ConfigDict

# refused: not written, because it would have raised an instance type above its healthy capacity.
Result = Literal["applied", "failed", "conflict", "not-attempted", "unchanged", "refused"]
WriteOperation = Literal["UpdateComputeQuota", "CreateComputeQuota", "DeleteComputeQuota"]


class ChangeOutcome(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    team: str
    operation: WriteOperation
    quota_id: str | None = None
    result: Result
    target_version: int | None = None
    version: int | None = None  # the version our write produced
    status: str | None = None  # the last status read
    message: str = ""
    # A rollback's: per pool, what the quota held when it was read, and what it holds after this outcome.
    held: dict[str, float] | None = None
    holds: dict[str, float] | None = None

    def line(self) -> str:
        where = f"{self.team} ({self.quota_id})" if self.quota_id else self.team
        versions = f" v{self.target_version}→v{self.version}" if self.version is not None else ""
        status = f" [{self.status}]" if self.status else ""
        tail = f": {self.message}" if self.message else ""
        return f"{self.result:<13} {self.operation} {where}{versions}{status}{tail}"


class ApplyReport(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    cluster_arn: str
    outcomes: tuple[ChangeOutcome, ...] = ()
    succeeded: bool
    error: str | None = None
    conflict: bool = False  # stopped because someone else changed a quota
    transient: bool = False  # stopped by throttling / 5xx / a status still in progress after the retries
    rollback: tuple[ChangeOutcome, ...] = ()
    rolled_back: bool | None = None  # None: no rollback was needed or attempted

    def lines(self) -> list[str]:
        out = [o.line() for o in self.outcomes]
        if self.error:
            out.append(f"error: {self.error}")
        if self.rolled_back is not None:
            out.append("rollback: " + ("restored the state before the apply" if self.rolled_back else
                                       "INCOMPLETE, check the quotas below"))
            out += ["  " + o.line() for o in self.rollback]
        return out
