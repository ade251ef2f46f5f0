"""The one DynamoDB table (keys pk/sk, TTL attribute `expires_at`): run artifacts, the audit log, approval records,
the per-cluster lock, per-team last-change times, and Powertools idempotency records.

Item layout (pk / sk):
  RUN#<execution>        / SNAPSHOT | PLAN | APPLY | SCHEDULER   gzip'd JSON, too big for Step Functions state
  RUN#<execution>        / DELIVERED#<kind>#<channel>     a notification that went out (retries skip it)
  AUDIT#<cluster>        / <ISO time>#<execution>#<kind>  before, after, who, when, outcome
  APPROVAL#<id>          / APPROVAL                       task token, status, decision expiry
  APPROVAL#<id>          / CONTEXT                        what triggered the run and when (the review page shows it)
  APPROVAL#<id>          / NONCE#<random part>            a review form that was submitted (single use)
  CLUSTER#<cluster>      / LOCK                           holder execution, acquired_at, followup (a change came
                                                          during the holder's run); expires_at is the TTL
  CLUSTER#<cluster>      / TEAM#<team>                    time of the team's last applied change
  CLUSTER#<cluster>      / VERSION#<team or (cluster)>    the quota (scheduler config) version our last write left
  SAMPLE#<cluster>       / <ISO time>                     gzip'd demand sample (rebalancer.domain.sample) written by
  observe
                                                          every few minutes; expires_at = time + the history
                                                          retention (HISTORY_RETENTION_DAYS). Its own partition per
                                                          cluster, apart from the metering facts (METER#).
  METER#<cluster>        / LAST                           the latest metering reading (rebalancer.budgets.metering)
  METER#<cluster>        / FACT#<start, UTC ISO>          use between two readings; one per start, never rewritten
  METER#<cluster>        / ALERT#<team>#<period>#<pct>    a budget threshold announced (once per period)
  idempotency#<function> / <hash>                         Powertools idempotency
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, Literal

import boto3
from boto3.dynamodb.conditions import Attr, Key
from botocore.exceptions import ClientError

from rebalancer.domain.clock import Clock, system_clock
from rebalancer.errors import ApprovalNotPending, TransientError

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.idempotency import DynamoDBPersistenceLayer

    from rebalancer.budgets.metering import Fact, Reading
    from rebalancer.domain.sample import DemandSample

ARTIFACT_RETENTION = timedelta(days=90)
# An audit field above this is stored gzip'd (`<field>_gz`): a plan of 1,000 teams x 15 types is ~0.5 MB of JSON,
# beyond DynamoDB's 400 KB item limit; compressed it is a small fraction of that. audit_log reads both forms.
AUDIT_INLINE_MAX = 32 * 1024
AUDIT_RETENTION = timedelta(days=400)
NONCE_RETENTION = timedelta(days=1)  # after the form's expiry: a replay then fails on the expiry anyway
KEY = "pk"
SORT = "sk"
TTL = "expires_at"

Artifact = Literal["SNAPSHOT", "PLAN", "APPLY", "SCHEDULER"]
ApprovalStatus = Literal["pending", "approved", "rejected", "expired"]


HISTORY_RETENTION = timedelta(days=90)  # the template's HistoryRetentionDays default


def _epoch(t: datetime) -> int:
    return int(t.timestamp())


@dataclass(frozen=True)
class LockResult:
    acquired: bool
    holder: str
    acquired_at: datetime


@dataclass(frozen=True)
class ApprovalRecord:
    approval_id: str
    task_token: str
    execution_arn: str
    cluster_name: str
    status: ApprovalStatus
    decide_by: datetime
    decided_by: str | None = None


@dataclass(frozen=True)
class RunContext:
    """What the review page shows about the run besides its plan."""

    trigger: dict[str, Any]
    started_at: str | None = None


class Store:
    def __init__(self, table_name: str, *, resource: Any = None, now: Clock = system_clock):
        self.table_name = table_name
        self._resource = resource
        self._table: Any = None
        self.now = now

    @property
    def table(self) -> Any:
        if self._table is None:
            self._table = (self._resource or boto3.resource("dynamodb")).Table(self.table_name)
        return self._table

    def idempotency_layer(self, function: str) -> DynamoDBPersistenceLayer:
        from aws_lambda_powertools.utilities.idempotency import DynamoDBPersistenceLayer  # apply and rollback only

        return DynamoDBPersistenceLayer(table_name=self.table_name, key_attr=KEY, sort_key_attr=SORT,
                                        static_pk_value=f"idempotency#{function}", expiry_attr=TTL)

    # --- run artifacts ---------------------------------------------------------------------------------------------
    def put_artifact(self, execution: str, kind: Artifact, document: Any) -> None:
        body = gzip.compress(json.dumps(document, separators=(",", ":"), sort_keys=True).encode())
        self.table.put_item(Item={KEY: f"RUN#{execution}", SORT: kind, "body": body,
                                  TTL: _epoch(self.now() + ARTIFACT_RETENTION)})

    def get_artifact(self, execution: str, kind: Artifact) -> Any:
        item = self.table.get_item(Key={KEY: f"RUN#{execution}", SORT: kind}, ConsistentRead=True).get("Item")
        if item is None:
            return None
        return json.loads(gzip.decompress(bytes(item["body"].value if hasattr(item["body"], "value")
                                                 else item["body"])))

    def mark_delivered(self, execution: str, kind: str, channel: str) -> bool:
        """True the first time; False when this notification already went out on this channel."""
        return self.put_new({KEY: f"RUN#{execution}", SORT: f"DELIVERED#{kind}#{channel}",
                             "at": self.now().isoformat(), TTL: _epoch(self.now() + ARTIFACT_RETENTION)})

    def put_new(self, item: dict[str, Any]) -> bool:
        """Writes the item unless one with its key exists: True if written, False if it was there already."""
        try:
            self.table.put_item(Item=item, ConditionExpression=Attr(KEY).not_exists())
        except ClientError as e:
            if e.response["Error"]["Code"] == "ConditionalCheckFailedException":
                return False
            raise
        return True

    def unmark_delivered(self, execution: str, kind: str, channel: str) -> None:
        self.table.delete_item(Key={KEY: f"RUN#{execution}", SORT: f"DELIVERED#{kind}#{channel}"})

    # --- audit -----------------------------------------------------------------------------------------------------
    def audit(self, cluster_name: str, execution: str, kind: str, *, outcome: str, who: str | None = None,
              before: Any = None, after: Any = None, detail: Any = None) -> None:
        at = self.now()
        item: dict[str, Any] = {KEY: f"AUDIT#{cluster_name}", SORT: f"{at.isoformat()}#{execution}#{kind}",
                                "kind": kind, "execution": execution, "at": at.isoformat(), "outcome": outcome,
                                TTL: _epoch(at + AUDIT_RETENTION)}
        for name, value in (("who", who), ("before", before), ("after", after), ("detail", detail)):
            if value is not None:
                text = json.dumps(value, sort_keys=True, default=str)
                if len(text) > AUDIT_INLINE_MAX:
                    item[f"{name}_gz"] = gzip.compress(text.encode())
                else:
                    item[name] = text
        self.table.put_item(Item=item)

    def audit_log(self, cluster_name: str) -> list[dict[str, Any]]:
        """Every audit record of a cluster, oldest first, with JSON fields decoded."""
        out = []
        for item in self._query(Key(KEY).eq(f"AUDIT#{cluster_name}")):
            rec = {k: v for k, v in item.items() if k not in (KEY, SORT, TTL)}
            for name in ("who", "before", "after", "detail"):
                if f"{name}_gz" in rec:
                    packed = rec.pop(f"{name}_gz")
                    rec[name] = json.loads(gzip.decompress(bytes(getattr(packed, "value", packed))))
                elif name in rec:
                    rec[name] = json.loads(rec[name])
            out.append(rec)
        return out

    # --- demand samples (backtest history) ---------------------------------------------------------------------
    def put_sample(self, sample: DemandSample, retention: timedelta = HISTORY_RETENTION) -> None:
        """One sample per cluster and time; a retried observe overwrites its own sample, nothing else."""
        body = gzip.compress(sample.model_dump_json().encode())
        self.table.put_item(Item={KEY: f"SAMPLE#{sample.cluster}", SORT: sample.at.astimezone(UTC).isoformat(),
                                  "body": body,
                                  TTL: _epoch(sample.at + retention)})

    def samples(self, cluster_name: str, since: datetime | None = None) -> Iterator[DemandSample]:
        """The cluster's samples, oldest first (from `since` on)."""
        condition: Any = Key(KEY).eq(f"SAMPLE#{cluster_name}")
        if since is not None:
            condition = condition & Key(SORT).gte(since.astimezone(UTC).isoformat())
        from rebalancer.domain.sample import (
            DemandSample,  # a pydantic model: only observe and the backtest read samples
        )

        for item in self._query(condition):
            body = item["body"]
            yield DemandSample.model_validate_json(gzip.decompress(bytes(getattr(body, "value", body))))

    def _query(self, condition: Any) -> Iterator[dict[str, Any]]:
        kwargs: dict[str, Any] = {"KeyConditionExpression": condition, "ConsistentRead": True}
        while True:
            page = self.table.query(**kwargs)
            yield from page.get("Items", [])
            if "LastEvaluatedKey" not in page:
                return
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    # --- per-cluster lock ------------------------------------------------------------------------------------------
    def acquire_lock(self, cluster_name: str, holder: str, ttl: timedelta, *, replace: str | None = None,
                     if_followup: bool = False) -> LockResult:
        """Conditional put: succeeds when there is no lock, it has expired, or it is held by `replace` (a finished
        run); with `if_followup`, only when held by `replace` and a follow-up was asked for during its run. A new
        lock has no follow-up. Otherwise returns the current holder."""
        now = self.now()
        cond: Any = Attr(KEY).not_exists() | Attr(TTL).lt(_epoch(now))
        if replace is not None:
            cond = cond | Attr("holder").eq(replace)
        if replace is not None and if_followup:
            cond = Attr("holder").eq(replace) & Attr("followup").exists()
        try:
            self.table.put_item(
                Item={KEY: f"CLUSTER#{cluster_name}", SORT: "LOCK", "holder": holder,
                      "acquired_at": now.isoformat(), TTL: _epoch(now + ttl)},
                ConditionExpression=cond)
            return LockResult(True, holder, now)
        except ClientError as e:
            if e.response["Error"]["Code"] != "ConditionalCheckFailedException":
                raise TransientError(f"DynamoDB PutItem (lock of {cluster_name}): {e}") from e
        item = self.table.get_item(Key={KEY: f"CLUSTER#{cluster_name}", SORT: "LOCK"}, ConsistentRead=True).get("Item")
        if item is None:  # released between our put and our read (if_followup on a lock that is gone)
            return LockResult(False, "", now)
        return LockResult(False, str(item["holder"]), datetime.fromisoformat(str(item["acquired_at"])))

    def request_followup(self, cluster_name: str, holder: str, reason: str) -> bool:
        """Marks the lock: a change arrived during `holder`'s run, so one more run must follow it. False when the
        lock is no longer `holder`'s (a newer run, which reads the cluster after the change anyway)."""
        try:
            self.table.update_item(
                Key={KEY: f"CLUSTER#{cluster_name}", SORT: "LOCK"},
                UpdateExpression="SET followup = :r, followup_at = :t",
                ConditionExpression=Attr("holder").eq(holder),
                ExpressionAttributeValues={":r": reason[:500], ":t": self.now().isoformat()})
        except ClientError as e:
            if e.response["Error"]["Code"] == "ConditionalCheckFailedException":
                return False
            raise TransientError(f"DynamoDB UpdateItem (follow-up of {cluster_name}): {e}") from e
        return True

    # --- per-team last change --------------------------------------------------------------------------------------
    def record_team_change(self, cluster_name: str, team: str, execution: str) -> None:
        self.table.put_item(Item={KEY: f"CLUSTER#{cluster_name}", SORT: f"TEAM#{team}",
                                  "last_change_at": self.now().isoformat(), "execution": execution})

    def team_changes(self, cluster_name: str) -> dict[str, datetime]:
        items = self._query(Key(KEY).eq(f"CLUSTER#{cluster_name}") & Key(SORT).begins_with("TEAM#"))
        return {str(i[SORT]).removeprefix("TEAM#"): datetime.fromisoformat(str(i["last_change_at"])) for i in items}

    # --- versions our writes left (a later plan tells a console edit from a policy change) ------------------------
    def record_versions(self, cluster_name: str, versions: dict[str, int], execution: str) -> None:
        """Per team (or `(cluster)` for the scheduler config): the version our last applied write produced."""
        at = self.now().isoformat()
        for name, version in sorted(versions.items()):
            self.table.put_item(Item={KEY: f"CLUSTER#{cluster_name}", SORT: f"VERSION#{name}",
                                      "version": int(version), "execution": execution, "at": at})

    def known_versions(self, cluster_name: str) -> dict[str, int]:
        items = self._query(Key(KEY).eq(f"CLUSTER#{cluster_name}") & Key(SORT).begins_with("VERSION#"))
        return {str(i[SORT]).removeprefix("VERSION#"): int(i["version"]) for i in items}

    # --- approvals -------------------------------------------------------------------------------------------------
    def put_approval(self, rec: ApprovalRecord) -> bool:
        """Stores a pending approval; False when one with this id exists (a retried request)."""
        return self.put_new({KEY: f"APPROVAL#{rec.approval_id}", SORT: "APPROVAL", "task_token": rec.task_token,
                             "execution_arn": rec.execution_arn, "cluster_name": rec.cluster_name,
                             "status": rec.status, "decide_by": rec.decide_by.isoformat(),
                             TTL: _epoch(rec.decide_by + ARTIFACT_RETENTION)})

    def get_approval(self, approval_id: str) -> ApprovalRecord | None:
        item = self.table.get_item(Key={KEY: f"APPROVAL#{approval_id}", SORT: "APPROVAL"},
                                   ConsistentRead=True).get("Item")
        if item is None:
            return None
        return ApprovalRecord(approval_id=approval_id, task_token=str(item["task_token"]),
                              execution_arn=str(item["execution_arn"]), cluster_name=str(item["cluster_name"]),
                              status=item["status"], decide_by=datetime.fromisoformat(str(item["decide_by"])),
                              decided_by=item.get("decided_by"))

    def decide_approval(self, approval_id: str, status: ApprovalStatus, who: str) -> ApprovalRecord:
        """Pending → decided, once. Raises ApprovalNotPending (with the current status) for a replay or a late
        decision."""
        now = self.now()
        try:
            self.table.update_item(
                Key={KEY: f"APPROVAL#{approval_id}", SORT: "APPROVAL"},
                UpdateExpression="SET #s = :s, decided_by = :w, decided_at = :t",
                ConditionExpression=Attr("status").eq("pending") & Attr("decide_by").gt(now.isoformat()),
                ExpressionAttributeNames={"#s": "status"},
                ExpressionAttributeValues={":s": status, ":w": who, ":t": now.isoformat()})
        except ClientError as e:
            if e.response["Error"]["Code"] != "ConditionalCheckFailedException":
                raise
            current = self.get_approval(approval_id)
            if current is None:
                raise ApprovalNotPending("unknown") from None
            late = current.status == "pending"
            raise ApprovalNotPending("expired" if late else current.status) from None
        rec = self.get_approval(approval_id)
        assert rec is not None
        return rec

    def put_run_context(self, approval_id: str, context: RunContext, decide_by: datetime) -> None:
        self.table.put_item(Item={KEY: f"APPROVAL#{approval_id}", SORT: "CONTEXT",
                                  "trigger": json.dumps(context.trigger, sort_keys=True, default=str),
                                  "started_at": context.started_at or "",
                                  TTL: _epoch(decide_by + ARTIFACT_RETENTION)})

    def run_context(self, approval_id: str) -> RunContext:
        """The stored context of the approval's run; an empty one when none was stored."""
        item = self.table.get_item(Key={KEY: f"APPROVAL#{approval_id}", SORT: "CONTEXT"},
                                   ConsistentRead=True).get("Item")
        if item is None:
            return RunContext(trigger={})
        trigger = json.loads(str(item.get("trigger") or "{}"))
        return RunContext(trigger=trigger if isinstance(trigger, dict) else {},
                          started_at=str(item.get("started_at") or "") or None)

    def claim_form_nonce(self, approval_id: str, nonce_id: str, expires: datetime) -> bool:
        """True the first time a review form (its nonce's random part) is submitted; False for a replay."""
        return self.put_new({KEY: f"APPROVAL#{approval_id}", SORT: f"NONCE#{nonce_id}",
                             "claimed_at": self.now().isoformat(), TTL: _epoch(expires + NONCE_RETENTION)})

    # --- metering: the latest reading, and a fact per interval between readings ------------------------------------
    def meter(self, cluster_name: str, reading: Reading, expected_gap: timedelta) -> MeterResult:
        """Adds the interval since the last reading as a fact and makes this reading the last, in one transaction:
        the fact is keyed on its start, so a retried run or a concurrent one that read the same last reading
        writes nothing (no double counting), and the last reading only moves forward."""
        pk = f"METER#{cluster_name}"
        item = self.table.get_item(Key={KEY: pk, SORT: "LAST"}, ConsistentRead=True).get("Item")
        new_last = {KEY: pk, SORT: "LAST", "at": _utc(reading.at), "body": _pack(reading.model_dump(mode="json"))}
        client = self.table.meta.client
        if item is None:
            puts = [{"Put": {"TableName": self.table_name, "Item": new_last,
                             "ConditionExpression": "attribute_not_exists(pk)"}}]
            return self._meter_transaction(client, puts, MeterResult("first", None))
        # pydantic models, imported by the handlers that meter (observe, collect), not by the trigger's cold start
        from rebalancer.budgets.metering import Reading, fact_between

        last = Reading.model_validate(_unpack(item["body"]))
        fact = fact_between(last, reading, expected_gap)
        if fact is None:
            return MeterResult("stale", None)
        puts = [{"Put": {"TableName": self.table_name,
                         "Item": {KEY: pk, SORT: f"FACT#{_utc(fact.start)}", "end": _utc(fact.end),
                                  "estimated": fact.estimated, "body": _pack(fact.model_dump(mode="json")),
                                  TTL: _epoch(fact.end + AUDIT_RETENTION)},
                         "ConditionExpression": "attribute_not_exists(pk)"}},
                {"Put": {"TableName": self.table_name, "Item": new_last,
                         "ConditionExpression": "#at = :last", "ExpressionAttributeNames": {"#at": "at"},
                         "ExpressionAttributeValues": {":last": str(item["at"])}}}]
        return self._meter_transaction(client, puts, MeterResult("recorded", fact))

    @staticmethod
    def _meter_transaction(client: Any, puts: list[dict[str, Any]], result: MeterResult) -> MeterResult:
        try:
            client.transact_write_items(TransactItems=puts)
        except ClientError as e:
            if e.response["Error"]["Code"] == "TransactionCanceledException":
                return MeterResult("duplicate", None)
            raise TransientError(f"DynamoDB TransactWriteItems (metering): {e}") from e
        return result

    def meter_facts(self, cluster_name: str, since: datetime, until: datetime) -> list[Fact]:
        """The facts overlapping [since, until), oldest first."""
        from rebalancer.budgets.metering import Fact

        kwargs: dict[str, Any] = {
            "KeyConditionExpression": Key(KEY).eq(f"METER#{cluster_name}") & Key(SORT).between("FACT#",
                                                                                                f"FACT#{_utc(until)}"),
            "ConsistentRead": True, "ScanIndexForward": False}
        out: list[Fact] = []
        since_key = _utc(since)
        while True:
            page = self.table.query(**kwargs)
            for item in page.get("Items", []):
                if str(item["end"]) <= since_key:  # facts chain end to start: every older one ends earlier
                    return out[::-1]
                fact = Fact.model_validate(_unpack(item["body"]))
                if fact.start < until:
                    out.append(fact)
            if "LastEvaluatedKey" not in page:
                return out[::-1]
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    def announce_once(self, cluster_name: str, key: str) -> bool:
        """True the first time `key` (team#period#threshold) is announced for this cluster."""
        return self.put_new({KEY: f"METER#{cluster_name}", SORT: f"ALERT#{key}", "at": self.now().isoformat(),
                             TTL: _epoch(self.now() + AUDIT_RETENTION)})


@dataclass(frozen=True)
class MeterResult:
    status: Literal["first", "recorded", "duplicate", "stale"]
    fact: Fact | None


def _utc(t: datetime) -> str:
    """Sortable key text: UTC, microseconds, fixed width."""
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _pack(document: Any) -> bytes:
    return gzip.compress(json.dumps(document, separators=(",", ":"), sort_keys=True).encode())


def _unpack(body: Any) -> Any:
    return json.loads(gzip.decompress(bytes(body.value if hasattr(body, "value") else body)))
