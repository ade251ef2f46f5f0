"""The one DynamoDB table (keys pk/sk, TTL attribute `expires_at`) and how its items are laid out. Each item family
has its repository beside this module; only this package builds keys or calls the table.

Item layout (pk / sk), by repository:
  artifacts    RUN#<execution>        / SNAPSHOT | PLAN | APPLY | SCHEDULER  gzip'd JSON, too big for Step
                                          | OUTLOOK                          Functions state (OUTLOOK: the
                                                                             estimated starts and standings)
  deliveries   RUN#<execution>        / DELIVERED#<kind>#<channel>     a notification that went out (retries
                                                                       skip it)
  audit        AUDIT#<cluster>        / <ISO time>#<execution>#<kind>  before, after, who, when, outcome
  approvals    APPROVAL#<id>          / APPROVAL                       task token, status, decision expiry
               APPROVAL#<id>          / CONTEXT                        what triggered the run and when (the
                                                                       review page shows it)
               APPROVAL#<id>          / NONCE#<random part>            a review form that was submitted (single
                                                                       use)
  locks        CLUSTER#<cluster>      / LOCK                           holder execution, acquired_at, followup (a
                                                                       change came during the holder's run);
                                                                       expires_at is the TTL
  versions     CLUSTER#<cluster>      / VERSION#<team or (cluster)>    the quota (scheduler config) version our
                                                                       last write left
  sightings    CLUSTER#<cluster>      / UNAVAILABLE                    per node unavailable for now: its state
                                                                       and since when runs have seen it so
               CLUSTER#<cluster>      / LAST-EVENT                     time of the latest cluster event the
                                                                       trigger received (only moves forward)
  durations    CLUSTER#<cluster>      / RUN-HISTORY                    gzip'd: workloads running as last seen,
                                                                       run durations of those seen to finish
  samples      SAMPLE#<cluster>       / <ISO time>                     gzip'd demand sample
                                                                       (rebalancer.domain.sample) written by
                                                                       observe every few minutes; expires_at =
                                                                       time + the history retention
                                                                       (HISTORY_RETENTION_DAYS)
  metering     METER#<cluster>        / LAST                           the latest metering reading
                                                                       (rebalancer.budgets.metering)
               METER#<cluster>        / FACT#<start, UTC ISO>          use between two readings; one per start,
                                                                       never rewritten
               METER#<cluster>        / ALERT#<team>#<period>#<pct>    a budget threshold announced (once per
                                                                       period)
  reservations RESERVATION#<cluster>  / <reservation id>               the reservation (JSON), its status, decider
                                                                       and started / ended flags; expires_at =
                                                                       until + the audit retention
  (Powertools) idempotency#<function> / <hash>                         Powertools idempotency
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import boto3
from boto3.dynamodb.conditions import Attr
from botocore.exceptions import ClientError

from rebalancer.domain.clock import Clock, system_clock

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.idempotency import DynamoDBPersistenceLayer

KEY = "pk"
SORT = "sk"
TTL = "expires_at"

ARTIFACT_RETENTION = timedelta(days=90)
AUDIT_RETENTION = timedelta(days=400)
HISTORY_RETENTION = timedelta(days=90)  # the template's HistoryRetentionDays default
NONCE_RETENTION = timedelta(days=1)  # after the form's expiry: a replay then fails on the expiry anyway


def epoch(t: datetime) -> int:
    return int(t.timestamp())


def sort_time(t: datetime) -> str:
    """Sortable key text: UTC, microseconds, fixed width."""
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def pack(document: Any) -> bytes:
    return gzip.compress(json.dumps(document, separators=(",", ":"), sort_keys=True).encode())


def unpack(body: Any) -> Any:
    return json.loads(unzip(body))


def unzip(body: Any) -> bytes:
    """A binary attribute's bytes (boto3 gives a Binary wrapper) decompressed."""
    return gzip.decompress(bytes(getattr(body, "value", body)))


def conditional_failed(e: ClientError) -> bool:
    return bool(e.response["Error"]["Code"] == "ConditionalCheckFailedException")


class Table:
    """The table, opened on first use (no boto3 resource at import or construction), and the clock its items are
    stamped with."""

    def __init__(self, name: str, *, resource: Any = None, now: Clock = system_clock):
        self.name = name
        self.now = now
        self._resource = resource
        self._table: Any = None

    @property
    def table(self) -> Any:
        if self._table is None:
            self._table = (self._resource or boto3.resource("dynamodb")).Table(self.name)
        return self._table

    def get(self, pk: str, sk: str) -> dict[str, Any] | None:
        item: dict[str, Any] | None = self.table.get_item(Key={KEY: pk, SORT: sk}, ConsistentRead=True).get("Item")
        return item

    def put_new(self, item: dict[str, Any]) -> bool:
        """Writes the item unless one with its key exists: True if written, False if it was there already."""
        try:
            self.table.put_item(Item=item, ConditionExpression=Attr(KEY).not_exists())
        except ClientError as e:
            if conditional_failed(e):
                return False
            raise
        return True

    def query(self, condition: Any, **options: Any) -> Iterator[dict[str, Any]]:
        """Every item matching the key condition, page after page, in sort-key order (unless options say not)."""
        kwargs: dict[str, Any] = {"KeyConditionExpression": condition, "ConsistentRead": True, **options}
        while True:
            page = self.table.query(**kwargs)
            yield from page.get("Items", [])
            if "LastEvaluatedKey" not in page:
                return
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    def idempotency_layer(self, function: str) -> DynamoDBPersistenceLayer:
        from aws_lambda_powertools.utilities.idempotency import DynamoDBPersistenceLayer  # apply and rollback only

        return DynamoDBPersistenceLayer(table_name=self.name, key_attr=KEY, sort_key_attr=SORT,
                                        static_pk_value=f"idempotency#{function}", expiry_attr=TTL)
