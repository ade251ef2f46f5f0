"""The one DynamoDB table (keys pk/sk, TTL attribute `expires_at`) and how its items are laid out. Each item family
has its repository beside this module; only this package builds keys or calls the table.

Item layout (pk / sk), by repository:
  artifacts    RUN#<execution>        / SNAPSHOT | RECHECK | CONTEXT |     gzip'd JSON, too big for Step
                                        PLAN | BASIS | APPLY | SCHEDULER |   Functions state (in parts when
                                        OUTLOOK | NEWS                       larger than PART_BYTES; RECHECK: the
                                                                             cluster read again after an approval;
                                                                             OUTLOOK: the estimated starts and
                                                                             standings; NEWS: the lines the run
                                                                             announces)
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
  sightings    CLUSTER#<cluster>      / UNAVAILABLE                    gzip'd (in parts when larger): per node
                                                                       unavailable for now, its state and since
                                                                       when runs have seen it so
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
                                                                       period), `run` the run that announces it;
                                                                       ALERT#summary#… and ALERT#advisory#… alike
  reservations RESERVATION#<cluster>  / <reservation id>               the reservation (JSON), its status, decider
                                                                       and started / ended flags; expires_at =
                                                                       until + the audit retention
  (Powertools) idempotency#<function> / <hash>                         Powertools idempotency
  (parts)      PART#<pk>#<sk>[#…]     / <index, 5 digits>              the gzip'd body of the item <pk>/<sk> (of
                                                                       one of its readings, of an audit record's
                                                                       field) in pieces of PART_BYTES, with the
                                                                       item's expiry (see Table.packed, put_parts)
"""

from __future__ import annotations

import gzip
import hashlib
import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import boto3
from boto3.dynamodb.conditions import Attr, Key
from botocore.exceptions import ClientError

from rebalancer.adapters.aws import aws_call
from rebalancer.domain.clock import Clock, system_clock
from rebalancer.errors import PermanentError

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


def pack(document: Any, level: int = 9) -> bytes:
    """`document` as gzip'd JSON; `level` 1 is about ten times faster and a tenth larger (to measure with)."""
    return gzip.compress(json.dumps(document, separators=(",", ":"), sort_keys=True).encode(), compresslevel=level)


def _parts_key(item: dict[str, Any]) -> str:
    return f"PART#{item[KEY]}#{item[SORT]}"


def unpack(body: Any) -> Any:
    return json.loads(unzip(body))


def unzip(body: Any) -> bytes:
    """A binary attribute's bytes (boto3 gives a Binary wrapper) decompressed."""
    return gzip.decompress(bytes(getattr(body, "value", body)))


# A gzip'd document up to this size is one attribute of its item; a larger one is written in parts of this size, each
# an item of its own (DynamoDB's items hold 400 KB, names and keys included). Compression alone does not bound a
# document: a cluster of 10,000 teams x 15 types has a 1.3 MB gzip'd snapshot and a 1 MB plan (benchmarks/
# plan_bench.synthetic), and text does not compress below its entropy.
PART_BYTES = 256 * 1024


def item_bytes(item: dict[str, Any]) -> int:
    """An item's size as DynamoDB counts it against its 400 KB, for items of string and binary attributes: each
    attribute's name and value, UTF-8."""
    return sum(len(name.encode()) + len(value if isinstance(value, bytes) else str(value).encode())
               for name, value in item.items())


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
        """The item, or None. A read that fails leaves as aws_call classifies it (throttled past the SDK's retries:
        TransientError), as every read of the table does."""
        with aws_call("dynamodb:GetItem", f"table {self.name}"):
            item: dict[str, Any] | None = self.table.get_item(Key={KEY: pk, SORT: sk},
                                                              ConsistentRead=True).get("Item")
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

    def put_packed(self, item: dict[str, Any], document: Any) -> None:
        """Writes `item` holding `document` gzip'd (`packed`, its parts under PART#<pk>#<sk>)."""
        self.table.put_item(Item={**item, **self.packed(_parts_key(item), document, item.get(TTL))})

    def packed(self, parts_key: str, document: Any, expires_at: Any = None) -> dict[str, Any]:
        """The attributes that hold `document` gzip'd in an item: its `body` when that fits in PART_BYTES, else the
        parts written now under `parts_key` (`put_parts`) and what names them. Write the item after this returns."""
        body = pack(document)
        if len(body) <= PART_BYTES:
            return {"body": body}
        return {**self.put_parts(parts_key, body, expires_at), "parts_key": parts_key}

    def unpacked(self, item: dict[str, Any]) -> Any:
        """The document an item written with `packed` attributes holds (its parts read back when it has them)."""
        return json.loads(self.unpacked_json(item))

    def unpacked_json(self, item: dict[str, Any]) -> bytes:
        """The JSON text of what `unpacked` returns (for a model's own JSON parser)."""
        if "body" in item:
            return unzip(item["body"])
        return gzip.decompress(self.get_parts(str(item["parts_key"]), item, f"{item[KEY]}/{item[SORT]}"))

    def put_parts(self, key: str, body: bytes, expires_at: Any = None) -> dict[str, Any]:
        """Writes `body` in pieces of PART_BYTES, each an item under `key` (with `expires_at`, when given) and
        returns what names them (count and SHA-256) for the item that holds them: written after its parts, it never
        names a part not yet written, and the digest tells parts of two writes apart."""
        parts = [body[i:i + PART_BYTES] for i in range(0, len(body), PART_BYTES)]
        expiry = {TTL: expires_at} if expires_at is not None else {}
        for i, part in enumerate(parts):
            self.table.put_item(Item={KEY: key, SORT: f"{i:05d}", "body": part, **expiry})
        return {"parts": len(parts), "digest": hashlib.sha256(body).hexdigest()}

    def get_parts(self, key: str, named: dict[str, Any], what: str) -> bytes:
        """The bytes `put_parts` wrote under `key`, as `named` (its answer, read back from the item) says."""
        count = int(named["parts"])
        parts = [bytes(getattr(p["body"], "value", p["body"]))
                 for p in self.query(Key(KEY).eq(key) & Key(SORT).lt(f"{count:05d}"))]
        body = b"".join(parts)
        if len(parts) != count or hashlib.sha256(body).hexdigest() != named.get("digest"):
            raise PermanentError(f"stored document {what} is incomplete: {len(parts)} of its {count} parts read, "
                                 "or they are not the parts it was written with")
        return body

    def query(self, condition: Any, **options: Any) -> Iterator[dict[str, Any]]:
        """Every item matching the key condition, page after page, in sort-key order (unless options say not)."""
        kwargs: dict[str, Any] = {"KeyConditionExpression": condition, "ConsistentRead": True, **options}
        while True:
            with aws_call("dynamodb:Query", f"table {self.name}"):
                page = self.table.query(**kwargs)
            yield from page.get("Items", [])
            if "LastEvaluatedKey" not in page:
                return
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    def idempotency_layer(self, function: str, client: Any) -> DynamoDBPersistenceLayer:
        """Powertools' idempotency records of `function` in this table, read and written with `client` (a low-level
        DynamoDB client: a layer left to make its own opens a boto3 session per invocation, which parses the
        DynamoDB service model again)."""
        from aws_lambda_powertools.utilities.idempotency import DynamoDBPersistenceLayer  # apply and rollback only

        return DynamoDBPersistenceLayer(table_name=self.name, key_attr=KEY, sort_key_attr=SORT,
                                        static_pk_value=f"idempotency#{function}", expiry_attr=TTL,
                                        boto3_client=client)
