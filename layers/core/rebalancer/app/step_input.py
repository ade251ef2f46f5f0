"""What the state machine passes each task, read through models: a malformed input is an InvalidInput naming the step
and the field (a PermanentError: the ASL's Catch routes it to the failure path and nothing retries it), never a
KeyError or an AttributeError from deep inside a step."""

from __future__ import annotations

from typing import Annotated, Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, NonNegativeInt, StringConstraints, model_validator

from rebalancer.app.kinds import Kind
from rebalancer.app.run_ref import RunRef
from rebalancer.errors import InvalidInput
from rebalancer.validation import load_model

Name = Annotated[str, StringConstraints(min_length=1, max_length=80)]
M = TypeVar("M", bound=BaseModel)


class StepInput(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")


class RunInput(StepInput):
    """Collect, Plan, Apply, Rollback: `run` from the Begin state (and more the step reads from its store)."""

    run: RunRef
    error: dict[str, Any] | None = None  # Rollback: the error that sent the run there

    @model_validator(mode="after")
    def _names(self) -> RunInput:
        for field in ("cluster_name", "execution_name", "execution_arn"):
            value = getattr(self.run, field)
            if not value or len(value) > 2048:
                raise ValueError(f"run.{field} must be a non-empty name (got {value[:60]!r})")
        return self


class VerifyApply(StepInput):
    quota_ids: tuple[Name, ...] = ()
    scheduler_config_id: Name | None = None


class VerifyInput(StepInput):
    attempt: NonNegativeInt
    apply: VerifyApply


class NotifyInput(StepInput):
    kind: Kind
    state: Annotated[dict[str, Any], Field()]

    @model_validator(mode="after")
    def _run(self) -> NotifyInput:
        RunInput.model_validate(self.state)  # the state carries the run; raises naming `run.…`
        return self


def parse(model: type[M], event: Any, step: str) -> M:
    if not isinstance(event, dict):
        raise InvalidInput(f"expected an object, got {type(event).__name__}", source=f"{step} input")
    return load_model(model, event, f"{step} input")


def run_of(event: Any, step: str) -> RunRef:
    return parse(RunInput, event, step).run
