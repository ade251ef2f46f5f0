"""The table's repositories, one per item family (their keys in rebalancer.adapters.dynamodb.table), over one table
opened on first use: what wiring hands the use cases, each of which types only the families it uses
(the Protocols beside them). rebalancer_tools.fakes.memory_store.MemoryStore is the same in memory."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from rebalancer.adapters.dynamodb.approvals import TableApprovals
from rebalancer.adapters.dynamodb.artifacts import TableArtifacts
from rebalancer.adapters.dynamodb.audit import TableAudit
from rebalancer.adapters.dynamodb.deliveries import TableDeliveries
from rebalancer.adapters.dynamodb.durations import TableDurations
from rebalancer.adapters.dynamodb.locks import TableLocks
from rebalancer.adapters.dynamodb.metering import TableMeter
from rebalancer.adapters.dynamodb.reservations import TableReservations
from rebalancer.adapters.dynamodb.samples import TableSamples
from rebalancer.adapters.dynamodb.sightings import TableSightings
from rebalancer.adapters.dynamodb.table import Table
from rebalancer.adapters.dynamodb.versions import TableVersions
from rebalancer.domain.clock import Clock, system_clock

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.idempotency import DynamoDBPersistenceLayer


class Store:
    def __init__(self, table_name: str, *, resource: Any = None, now: Clock = system_clock):
        self.table = Table(table_name, resource=resource, now=now)
        self.table_name = table_name
        self.artifacts = TableArtifacts(self.table)
        self.deliveries = TableDeliveries(self.table)
        self.audit = TableAudit(self.table)
        self.approvals = TableApprovals(self.table)
        self.locks = TableLocks(self.table)
        self.versions = TableVersions(self.table)
        self.meter = TableMeter(self.table)
        self.samples = TableSamples(self.table)
        self.reservations = TableReservations(self.table)
        self.sightings = TableSightings(self.table)
        self.durations = TableDurations(self.table)

    def now(self) -> datetime:
        return self.table.now()

    def idempotency_layer(self, function: str, client: Any) -> DynamoDBPersistenceLayer:
        return self.table.idempotency_layer(function, client)
