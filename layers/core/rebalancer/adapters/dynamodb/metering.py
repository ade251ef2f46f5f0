"""Metering (rebalancer.budgets.metering): the latest reading per cluster, a fact per interval between readings, and
the budget thresholds already announced."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from boto3.dynamodb.conditions import Attr, Key
from botocore.exceptions import ClientError

from rebalancer.adapters.dynamodb.table import (
    AUDIT_RETENTION,
    KEY,
    SORT,
    TTL,
    Table,
    conditional_failed,
    epoch,
    sort_time,
)
from rebalancer.errors import TransientError

if TYPE_CHECKING:
    from rebalancer.budgets.metering import Fact, MeterResult, Reading


class TableMeter:
    def __init__(self, table: Table):
        self.t = table

    def record(self, cluster_name: str, reading: Reading, expected_gap: timedelta) -> MeterResult:
        """Adds the interval since the last reading as a fact and makes this reading the last, in one transaction:
        the fact is keyed on its start, so a retried run or a concurrent one that read the same last reading
        writes nothing (no double counting), and the last reading only moves forward."""
        # pydantic models, imported by the handlers that meter (observe, collect), not by the trigger's cold start
        from rebalancer.budgets.metering import MeterResult, Reading, fact_between

        pk = f"METER#{cluster_name}"
        item = self.t.get(pk, "LAST")
        # A reading too big for one item goes in parts keyed by its time, so a write that loses the race below leaves
        # the last reading's parts as they were (its own expire).
        new_last = {KEY: pk, SORT: "LAST", "at": sort_time(reading.at),
                    **self.t.packed(f"PART#{pk}#LAST#{sort_time(reading.at)}", reading.model_dump(mode="json"),
                                    epoch(reading.at + AUDIT_RETENTION))}
        if item is None:
            puts = [{"Put": {"TableName": self.t.name, "Item": new_last,
                             "ConditionExpression": "attribute_not_exists(pk)"}}]
            return self._transaction(puts, MeterResult("first", None))
        fact = fact_between(Reading.model_validate(self.t.unpacked(item)), reading, expected_gap)
        if fact is None:
            return MeterResult("stale", None)
        expires = epoch(fact.end + AUDIT_RETENTION)
        body = self.t.packed(f"PART#{pk}#FACT#{sort_time(fact.start)}#{sort_time(fact.end)}",
                             fact.model_dump(mode="json"), expires)
        puts = [{"Put": {"TableName": self.t.name,
                         "Item": {KEY: pk, SORT: f"FACT#{sort_time(fact.start)}", "end": sort_time(fact.end),
                                  "estimated": fact.estimated, **body, TTL: expires},
                         "ConditionExpression": "attribute_not_exists(pk)"}},
                {"Put": {"TableName": self.t.name, "Item": new_last,
                         "ConditionExpression": "#at = :last", "ExpressionAttributeNames": {"#at": "at"},
                         "ExpressionAttributeValues": {":last": str(item["at"])}}}]
        return self._transaction(puts, MeterResult("recorded", fact))

    def _transaction(self, puts: list[dict[str, Any]], result: MeterResult) -> MeterResult:
        from rebalancer.budgets.metering import MeterResult

        try:
            self.t.table.meta.client.transact_write_items(TransactItems=puts)
        except ClientError as e:
            if e.response["Error"]["Code"] == "TransactionCanceledException":
                return MeterResult("duplicate", None)
            raise TransientError(f"DynamoDB TransactWriteItems (metering): {e}") from e
        return result

    def facts(self, cluster_name: str, since: datetime, until: datetime) -> list[Fact]:
        """The facts overlapping [since, until), oldest first."""
        from rebalancer.budgets.metering import Fact

        newest_first = self.t.query(Key(KEY).eq(f"METER#{cluster_name}")
                                    & Key(SORT).between("FACT#", f"FACT#{sort_time(until)}"), ScanIndexForward=False)
        out: list[Fact] = []
        since_key = sort_time(since)
        for item in newest_first:
            if str(item["end"]) <= since_key:  # facts chain end to start: every older one ends earlier
                break
            fact = Fact.model_validate(self.t.unpacked(item))
            if fact.start < until:
                out.append(fact)
        return out[::-1]

    def claim(self, cluster_name: str, key: str, run: str) -> bool:
        """True when `run` announces `key` (team#period#threshold, summary#…, advisory#…) for this cluster: the first
        claim, or the same run's again (a retried step says what its first attempt claimed); False once another run
        has."""
        now = self.t.now()
        try:
            self.t.table.put_item(
                Item={KEY: f"METER#{cluster_name}", SORT: f"ALERT#{key}", "at": now.isoformat(), "run": run,
                      TTL: epoch(now + AUDIT_RETENTION)},
                ConditionExpression=Attr(KEY).not_exists() | Attr("run").eq(run))
        except ClientError as e:
            if conditional_failed(e):
                return False
            raise
        return True
