"""The per-cluster lock: one run at a time, and the mark that asks for one more run after it."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from boto3.dynamodb.conditions import Attr
from botocore.exceptions import ClientError

from rebalancer.adapters.dynamodb.table import KEY, SORT, TTL, Table, conditional_failed, epoch
from rebalancer.domain.records import LockResult
from rebalancer.errors import TransientError


class TableLocks:
    def __init__(self, table: Table):
        self.t = table

    def acquire(self, cluster_name: str, holder: str, ttl: timedelta, *, replace: str | None = None,
                if_followup: bool = False) -> LockResult:
        """Conditional put: succeeds when there is no lock, it has expired, or it is held by `replace` (a finished
        run); with `if_followup`, only when held by `replace` and a follow-up was asked for during its run. A new
        lock has no follow-up. Otherwise returns the current holder."""
        now = self.t.now()
        cond: Any = Attr(KEY).not_exists() | Attr(TTL).lt(epoch(now))
        if replace is not None:
            cond = cond | Attr("holder").eq(replace)
        if replace is not None and if_followup:
            cond = Attr("holder").eq(replace) & Attr("followup").exists()
        try:
            self.t.table.put_item(
                Item={KEY: f"CLUSTER#{cluster_name}", SORT: "LOCK", "holder": holder,
                      "acquired_at": now.isoformat(), TTL: epoch(now + ttl)},
                ConditionExpression=cond)
            return LockResult(True, holder, now)
        except ClientError as e:
            if not conditional_failed(e):
                raise TransientError(f"DynamoDB PutItem (lock of {cluster_name}): {e}") from e
        item = self.t.get(f"CLUSTER#{cluster_name}", "LOCK")
        if item is None:  # released between our put and our read (if_followup on a lock that is gone)
            return LockResult(False, "", now)
        return LockResult(False, str(item["holder"]), datetime.fromisoformat(str(item["acquired_at"])))

    def request_followup(self, cluster_name: str, holder: str, reason: str) -> bool:
        """Marks the lock: a change arrived during `holder`'s run, so one more run must follow it. False when the
        lock is no longer `holder`'s (a newer run, which reads the cluster after the change anyway)."""
        try:
            self.t.table.update_item(
                Key={KEY: f"CLUSTER#{cluster_name}", SORT: "LOCK"},
                UpdateExpression="SET followup = :r, followup_at = :t",
                ConditionExpression=Attr("holder").eq(holder),
                ExpressionAttributeValues={":r": reason[:500], ":t": self.t.now().isoformat()})
        except ClientError as e:
            if conditional_failed(e):
                return False
            raise TransientError(f"DynamoDB UpdateItem (follow-up of {cluster_name}): {e}") from e
        return True
