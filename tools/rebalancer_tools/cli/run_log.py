"""Where a CLI run records itself for the use cases of `rebalancer.app.workflow.runs`: the controller's table (named by
--table / --stack / $REBALANCER_TABLE), each call's AWS error one line; or, without a table, memory that keeps the
run's documents for the run itself, records nothing and knows no versions (as the controller with an empty
table: a setting the policy rewrites is then marked a console edit)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from rebalancer.adapters.aws import aws_call
from rebalancer.errors import PermanentError

if TYPE_CHECKING:
    from rebalancer.adapters.dynamodb.store import MeterResult, Store
    from rebalancer.budgets.metering import Fact

NO_TABLE_WARNING = ("no audit table (--table / --stack / $REBALANCER_TABLE): the versions the controller's writes "
                    "left are unknown, so a setting the policy rewrites is marked a console edit; no budget use is "
                    "known (none metered); this run is not recorded")


def cli_execution(cluster_name: str, at: datetime) -> str:
    """A CLI run's name, beside the controller's `<cluster>-<window start>` executions in `history`."""
    return f"{cluster_name}-cli{at.astimezone(UTC):%Y%m%dT%H%M%S}"


class TableLog:
    """The controller's table through rebalancer.adapters.dynamodb.store.Store; every failure is one line naming the
    call."""

    recorded = True

    def __init__(self, store: Store):
        self.store = store
        self.table_name = store.table_name

    @contextmanager
    def _call(self, call: str) -> Iterator[None]:
        with aws_call(call, f"audit table {self.table_name}"):
            yield

    def now(self) -> datetime:
        return self.store.now()

    def put_artifact(self, execution: str, kind: Any, document: Any) -> None:
        with self._call("PutItem"):
            self.store.put_artifact(execution, kind, document)

    def get_artifact(self, execution: str, kind: Any) -> Any:
        with self._call("GetItem"):
            return self.store.get_artifact(execution, kind)

    def audit(self, cluster_name: str, execution: str, kind: str, *, outcome: str, who: str | None = None,
              before: Any = None, after: Any = None, detail: Any = None) -> None:
        with self._call("PutItem"):
            self.store.audit(cluster_name, execution, kind, outcome=outcome, who=who, before=before, after=after,
                             detail=detail)

    def record_team_change(self, cluster_name: str, team: str, execution: str) -> None:
        with self._call("PutItem"):
            self.store.record_team_change(cluster_name, team, execution)

    def record_versions(self, cluster_name: str, versions: dict[str, int], execution: str) -> None:
        with self._call("PutItem"):
            self.store.record_versions(cluster_name, versions, execution)

    def known_versions(self, cluster_name: str) -> dict[str, int]:
        with self._call("Query"):
            return self.store.known_versions(cluster_name)

    def audit_log(self, cluster_name: str) -> list[dict[str, Any]]:
        with self._call("Query"):
            return self.store.audit_log(cluster_name)

    def meter_facts(self, cluster_name: str, since: datetime, until: datetime) -> list[Fact]:
        with self._call("Query"):
            return self.store.meter_facts(cluster_name, since, until)

    def meter(self, cluster_name: str, reading: Any, expected_gap: timedelta) -> MeterResult:
        with self._call("TransactWriteItems"):
            return self.store.meter(cluster_name, reading, expected_gap)

    def announce_once(self, cluster_name: str, key: str) -> bool:
        with self._call("PutItem"):
            return self.store.announce_once(cluster_name, key)


class MemoryLog:
    """No table: the run's documents live as long as the command; no audit record, no version is kept."""

    recorded = False

    def __init__(self) -> None:
        self.artifacts: dict[tuple[str, str], Any] = {}

    def now(self) -> datetime:
        return datetime.now(UTC)

    def put_artifact(self, execution: str, kind: Any, document: Any) -> None:
        self.artifacts[(execution, str(kind))] = document

    def get_artifact(self, execution: str, kind: Any) -> Any:
        return self.artifacts.get((execution, str(kind)))

    def audit(self, cluster_name: str, execution: str, kind: str, *, outcome: str, who: str | None = None,
              before: Any = None, after: Any = None, detail: Any = None) -> None:
        pass

    def audit_log(self, cluster_name: str) -> list[dict[str, Any]]:
        return []

    def record_team_change(self, cluster_name: str, team: str, execution: str) -> None:
        pass

    def record_versions(self, cluster_name: str, versions: dict[str, int], execution: str) -> None:
        pass

    def known_versions(self, cluster_name: str) -> dict[str, int]:
        return {}

    def meter_facts(self, cluster_name: str, since: datetime, until: datetime) -> list[Fact]:
        return []

    def meter(self, cluster_name: str, reading: Any, expected_gap: timedelta) -> MeterResult:
        raise PermanentError("metering needs the controller's table")

    def announce_once(self, cluster_name: str, key: str) -> bool:
        return False
