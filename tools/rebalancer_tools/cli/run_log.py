"""Where a CLI run records itself for the use cases of `rebalancer.app.workflow.runs`: the controller's table (named by
--table / --stack / $REBALANCER_TABLE), each call's AWS error one line; or, without a table, memory
(rebalancer_tools.fakes.memory_store) that keeps the run's records for the command's life only and starts knowing no
versions (as the controller with an empty table: a setting the policy rewrites is then marked a console edit)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, cast

from rebalancer.adapters.aws import aws_call
from rebalancer_tools.fakes.memory_store import MemoryStore

if TYPE_CHECKING:
    from rebalancer.adapters.dynamodb.store import Store
    from rebalancer.app.workflow import run_plan, runs
    from rebalancer_tools.cli.cluster_lock import Locks

    class RunStore(run_plan.RecordsAndSources, runs.RecordsAndVersions, Protocol):
        """What the CLI's runs record in: the plan's store and the writing use cases' alike, and the cluster's
        lock."""

        @property
        def versions(self) -> runs.Versions: ...
        @property
        def locks(self) -> Locks: ...


NO_TABLE_WARNING = ("no audit table (--table / --stack / $REBALANCER_TABLE): the versions the controller's writes "
                    "left are unknown, so a setting the policy rewrites is marked a console edit; no budget use is "
                    "known (none metered); this run is not recorded")
# The DynamoDB call behind each repository method the CLI's runs use, for the one-line error.
CALLS = {("artifacts", "put"): "PutItem", ("artifacts", "get"): "GetItem", ("audit", "append"): "PutItem",
         ("audit", "records"): "Query", ("versions", "record"): "PutItem", ("versions", "known"): "Query",
         ("meter", "record"): "TransactWriteItems", ("meter", "facts"): "Query", ("meter", "claim"): "PutItem",
         ("reservations", "of_cluster"): "Query", ("sightings", "unavailable"): "GetItem",
         ("sightings", "record_unavailable"): "PutItem", ("locks", "acquire"): "PutItem",
         ("locks", "holding"): "GetItem", ("locks", "request_followup"): "UpdateItem", ("locks", "renew"): "UpdateItem",
         ("locks", "release"): "DeleteItem"}
R = TypeVar("R")


def cli_execution(cluster_name: str, at: datetime) -> str:
    """A CLI run's name, beside the controller's `<cluster>-<window start>` executions in `history`."""
    return f"{cluster_name}-cli{at.astimezone(UTC):%Y%m%dT%H%M%S}"


class _OneLine:
    """A repository whose every call's AWS failure leaves as one line naming the call and the table."""

    def __init__(self, repository: Any, family: str, table_name: str):
        self._repository, self._family, self._table = repository, family, table_name

    def __getattr__(self, name: str) -> Callable[..., Any]:
        method = getattr(self._repository, name)

        def call(*args: Any, **kwargs: Any) -> Any:
            with aws_call(CALLS.get((self._family, name), f"DynamoDB ({self._family}.{name})"),
                          f"audit table {self._table}"):
                return method(*args, **kwargs)

        return call


def _one_line(repository: R, family: str, table_name: str) -> R:
    return cast(R, _OneLine(repository, family, table_name))


@dataclass(frozen=True, slots=True)
class RunLog:
    """The store a CLI run's use cases are given, and whether what it records outlives the command."""

    store: RunStore
    now: Callable[[], datetime]
    recorded: bool


class _TableRecords:
    def __init__(self, store: Store):
        self.artifacts = _one_line(store.artifacts, "artifacts", store.table_name)
        self.audit = _one_line(store.audit, "audit", store.table_name)
        self.versions = _one_line(store.versions, "versions", store.table_name)
        self.meter = _one_line(store.meter, "meter", store.table_name)
        self.reservations = _one_line(store.reservations, "reservations", store.table_name)
        self.sightings = _one_line(store.sightings, "sightings", store.table_name)
        self.locks = _one_line(store.locks, "locks", store.table_name)


def table_log(store: Store) -> RunLog:
    """The controller's table through its repositories."""
    return RunLog(_TableRecords(store), store.now, recorded=True)


def memory_log() -> RunLog:
    """No table: the run's documents live as long as the command; nothing is recorded past it."""
    memory = MemoryStore()
    return RunLog(memory, memory.now, recorded=False)
