"""One run as every step and the CLI name it, and its stored snapshot and plan read back. A module of its own so
that the steps that only read a run (approval, notify) do not load the planner and the writers with `app.runs`."""

from __future__ import annotations

from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict

from rebalancer.errors import PermanentError
from rebalancer.models import Snapshot
from rebalancer.plan import Plan


class RunRef(BaseModel):
    """One run: what the state machine's Begin state passes to every step, or what the CLI makes for itself."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    cluster_name: str
    execution_name: str
    execution_arn: str
    trigger: dict[str, Any] = {}
    started_at: str | None = None
    source: str = "controller"  # who ran it, in every audit record: "controller" (the workflow) or "cli"


class Artifacts(Protocol):
    """The part of rebalancer.app.store.Store these read."""

    def get_artifact(self, execution: str, kind: Any) -> Any: ...


def load_snapshot(store: Artifacts, run: RunRef) -> Snapshot:
    doc = store.get_artifact(run.execution_name, "SNAPSHOT")
    if doc is None:
        raise PermanentError(f"no snapshot stored for execution {run.execution_name}")
    return Snapshot.model_validate(doc)


def load_plan(store: Artifacts, run: RunRef) -> Plan:
    doc = store.get_artifact(run.execution_name, "PLAN")
    if doc is None:
        raise PermanentError(f"no plan stored for execution {run.execution_name}")
    return Plan.model_validate(doc)
