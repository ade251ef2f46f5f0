"""The per-cluster lock: one writer at a time (a controller run, or a command-line apply / rollback holding a lease
that expires), and the mark that asks for one more run after it.

An item this code did not write (a field removed or retyped in the console) is never read into a traceback:
LockUnreadable names the item and what to do, and `break_lock` deletes it (the CLI's `rebalancer lock break`, audited).
Until then its cluster stays locked: an item that may hold a writer is not taken over on a guess."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

from boto3.dynamodb.conditions import Attr
from botocore.exceptions import ClientError

from rebalancer.adapters.dynamodb.table import KEY, SORT, TTL, Table, conditional_failed, epoch
from rebalancer.domain.records import LockResult
from rebalancer.errors import LockUnreadable, TransientError
from rebalancer.parsing.text import short


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
        # An expiry of another type (an item edited by hand) is no expiry: DynamoDB finds such a comparison false,
        # and says so here in as many words (moto would raise instead).
        cond: Any = Attr(KEY).not_exists() | (Attr(TTL).attribute_type("N") & Attr(TTL).lt(epoch(now)))
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
        item = self.raw(cluster_name)
        if item is None:
            return None
        try:
            return _result(item)
        except (KeyError, ValueError, TypeError) as e:
            raise LockUnreadable(cluster_name, self.t.name, _problem(e)) from None

    def raw(self, cluster_name: str) -> dict[str, Any] | None:
        """The lock item as stored, whatever it holds (None: no lock)."""
        return self.t.get(f"CLUSTER#{cluster_name}", "LOCK")

    def break_lock(self, cluster_name: str, seen: dict[str, Any]) -> bool:
        """Deletes the lock item if it is still `seen` (as `raw` read it: every attribute unchanged), whoever holds
        it and whatever it holds. False when it changed or went meanwhile (nothing deleted)."""
        cond: Any = Attr(KEY).exists()
        for name, value in seen.items():
            if name not in (KEY, SORT):
                cond = cond & Attr(name).eq(value)
        for gone in _FIELDS - seen.keys():
            cond = cond & Attr(gone).not_exists()
        try:
            self.t.table.delete_item(Key=self._key(cluster_name), ConditionExpression=cond)
        except ClientError as e:
            if conditional_failed(e):
                return False
            raise TransientError(f"DynamoDB DeleteItem (lock of {cluster_name}): {e}") from e
        return True

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


# Every attribute a lock item may carry besides its key, as acquire and request_followup write them.
_TEXT = ("holder", "acquired_at", "run_arn", "by", "followup", "followup_at", "followup_machine")
_FIELDS = frozenset((*_TEXT, TTL, "followup_lease"))


def _problem(e: Exception) -> str:
    return f"field {e.args[0]!r} is missing" if isinstance(e, KeyError) else str(e)


def _result(item: dict[str, Any]) -> LockResult:
    """The item as acquire and request_followup write it (a field it does not know is ignored); KeyError (a required
    field missing), ValueError or TypeError (a field of another type) otherwise."""
    for name in _TEXT:
        if name in item and not isinstance(item[name], str):
            raise TypeError(f"field {name!r} is not text ({type(item[name]).__name__})")
    for name in (TTL, "followup_lease"):
        if name in item and (isinstance(item[name], bool) or not isinstance(item[name], int | Decimal)
                             or item[name] != int(item[name]) or item[name] <= 0):
            raise TypeError(f"field {name!r} is not a positive whole number ({short(item[name], 40)})")
    holder, acquired = item["holder"], item["acquired_at"]
    expires = item[TTL]  # a lock that never expires is one nobody could take again
    if not holder:
        raise ValueError("field 'holder' is empty")
    try:
        at = datetime.fromisoformat(acquired)
    except ValueError:
        raise ValueError(f"field 'acquired_at' is not an ISO-8601 time ({short(acquired, 40)})") from None
    if at.tzinfo is None:
        raise ValueError(f"field 'acquired_at' has no time zone ({short(acquired, 40)})")
    return LockResult(False, holder, at, expires_at=_at(expires), run_arn=item.get("run_arn"), by=item.get("by"),
                      followup=item.get("followup"), followup_machine=item.get("followup_machine"),
                      followup_lease_seconds=int(item["followup_lease"]) if "followup_lease" in item else None)
