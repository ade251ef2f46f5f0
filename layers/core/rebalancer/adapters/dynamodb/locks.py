"""The per-cluster lock: one writer at a time (a controller run, or a command-line apply / rollback holding a lease
that expires), and the mark that asks for one more run after it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from boto3.dynamodb.conditions import Attr
from botocore.exceptions import ClientError

from rebalancer.adapters.dynamodb.table import KEY, SORT, TTL, Table, conditional_failed, epoch
from rebalancer.domain.records import LockResult
from rebalancer.errors import TransientError


class TableLocks:
    def __init__(self, table: Table):
        self.t = table

    def _key(self, cluster_name: str) -> dict[str, str]:
        return {KEY: f"CLUSTER#{cluster_name}", SORT: "LOCK"}

    def acquire(self, cluster_name: str, holder: str, ttl: timedelta, *, replace: str | None = None,
                if_followup: bool = False, run_arn: str | None = None, by: str | None = None) -> LockResult:
        """Conditional put: succeeds when there is no lock, it has expired, or it is held by `replace` (a finished
        run); with `if_followup`, only when held by `replace` and a follow-up was asked for during its run. A new
        lock has no follow-up. `run_arn`: the holder's execution; `by`: a lease taken from the command line, which
        never takes over a lock whose follow-up is still to start. Otherwise returns the current holder."""
        now = self.t.now()
        cond: Any = Attr(KEY).not_exists() | Attr(TTL).lt(epoch(now))
        if replace is not None:
            cond = cond | (Attr("holder").eq(replace) & Attr("followup").not_exists() if by is not None
                           else Attr("holder").eq(replace))
        if replace is not None and if_followup:
            cond = Attr("holder").eq(replace) & Attr("followup").exists()
        item: dict[str, Any] = {**self._key(cluster_name), "holder": holder, "acquired_at": now.isoformat(),
                                TTL: epoch(now + ttl)}
        if run_arn is not None:
            item["run_arn"] = run_arn
        if by is not None:
            item["by"] = by
        try:
            self.t.table.put_item(Item=item, ConditionExpression=cond)
            return LockResult(True, holder, now, expires_at=_at(epoch(now + ttl)), run_arn=run_arn, by=by)
        except ClientError as e:
            if not conditional_failed(e):
                raise TransientError(f"DynamoDB PutItem (lock of {cluster_name}): {e}") from e
        held = self.holding(cluster_name)
        if held is None:  # released between our put and our read (if_followup on a lock that is gone)
            return LockResult(False, "", now)
        return held

    def holding(self, cluster_name: str) -> LockResult | None:
        """The lock as it stands (`acquired` False: a reading, not an attempt), or None when nobody holds it."""
        item = self.t.get(f"CLUSTER#{cluster_name}", "LOCK")
        return None if item is None else _result(item)

    def request_followup(self, cluster_name: str, holder: str, reason: str, *, machine: str | None = None,
                         lease: timedelta | None = None) -> bool:
        """Marks the lock: a change arrived during `holder`'s run, so one more run must follow it, on `machine` with
        a lock of `lease` (what a command-line holder needs to start it when it lets go). False when the lock is no
        longer `holder`'s (a newer run, which reads the cluster after the change anyway)."""
        values: dict[str, Any] = {":r": reason[:500], ":t": self.t.now().isoformat()}
        update = "SET followup = :r, followup_at = :t"
        if machine is not None and lease is not None:
            update += ", followup_machine = :m, followup_lease = :l"
            values |= {":m": machine, ":l": int(lease.total_seconds())}
        try:
            self.t.table.update_item(Key=self._key(cluster_name), UpdateExpression=update,
                                     ConditionExpression=Attr("holder").eq(holder), ExpressionAttributeValues=values)
        except ClientError as e:
            if conditional_failed(e):
                return False
            raise TransientError(f"DynamoDB UpdateItem (follow-up of {cluster_name}): {e}") from e
        return True

    def renew(self, cluster_name: str, holder: str, ttl: timedelta) -> bool:
        """The lease runs `ttl` from now; False when the lock is no longer `holder`'s (it expired and was taken)."""
        try:
            self.t.table.update_item(Key=self._key(cluster_name), UpdateExpression="SET #ttl = :e",
                                     ConditionExpression=Attr("holder").eq(holder),
                                     ExpressionAttributeNames={"#ttl": TTL},
                                     ExpressionAttributeValues={":e": epoch(self.t.now() + ttl)})
        except ClientError as e:
            if conditional_failed(e):
                return False
            raise TransientError(f"DynamoDB UpdateItem (lease of {cluster_name}): {e}") from e
        return True

    def release(self, cluster_name: str, holder: str) -> LockResult | None:
        """Lets go of `holder`'s lock unless a follow-up was asked for during it. None when released; otherwise the
        lock as it stands: still `holder`'s with the follow-up to start, or someone else's (ours had expired)."""
        try:
            self.t.table.delete_item(Key=self._key(cluster_name),
                                     ConditionExpression=Attr("holder").eq(holder) & Attr("followup").not_exists())
        except ClientError as e:
            if not conditional_failed(e):
                raise TransientError(f"DynamoDB DeleteItem (lock of {cluster_name}): {e}") from e
            return self.holding(cluster_name)
        return None


def _at(seconds: Any) -> datetime:
    return datetime.fromtimestamp(int(seconds), UTC)


def _result(item: dict[str, Any]) -> LockResult:
    def text(name: str) -> str | None:
        return None if item.get(name) is None else str(item[name])

    return LockResult(False, str(item["holder"]), datetime.fromisoformat(str(item["acquired_at"])),
                      expires_at=_at(item[TTL]) if item.get(TTL) is not None else None, run_arn=text("run_arn"),
                      by=text("by"), followup=text("followup"), followup_machine=text("followup_machine"),
                      followup_lease_seconds=int(item["followup_lease"]) if item.get("followup_lease") else None)
