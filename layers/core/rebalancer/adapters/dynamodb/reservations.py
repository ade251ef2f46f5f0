"""Reservations: one item per reservation under its cluster. What never changes is kept as the reservation's JSON;
its status, decider and the started / ended flags are attributes of their own, so each changes with a conditional
update (decided once, announced once)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from boto3.dynamodb.conditions import Attr, Key
from botocore.exceptions import ClientError

from rebalancer.adapters.dynamodb.table import AUDIT_RETENTION, KEY, SORT, TTL, Table, conditional_failed, epoch
from rebalancer.domain.reservation import Reservation, ReservationStatus
from rebalancer.errors import ReservationNotPending, UnknownReservation
from rebalancer.parsing.text import printable
from rebalancer.parsing.validation import stored_model

MUTABLE = ("status", "decided_by", "started_at", "ended_at")


def _pk(cluster: str) -> str:
    return f"RESERVATION#{cluster}"


class TableReservations:
    def __init__(self, table: Table):
        self.t = table

    def put(self, rec: Reservation) -> bool:
        """Stores a new reservation; False when one with its id exists."""
        doc = rec.model_dump(mode="json", exclude=set(MUTABLE))
        item: dict[str, Any] = {KEY: _pk(rec.cluster), SORT: rec.reservation_id, "doc": json.dumps(doc),
                                "status": rec.status, TTL: epoch(rec.until + AUDIT_RETENTION)}
        return self.t.put_new(item)

    def get(self, cluster: str, reservation_id: str) -> Reservation | None:
        item = self.t.get(_pk(cluster), reservation_id)
        return None if item is None else _of(item)

    def of_cluster(self, cluster: str) -> list[Reservation]:
        """The cluster's reservations, in id order."""
        return [_of(item) for item in self.t.query(Key(KEY).eq(_pk(cluster)))]

    def decide(self, cluster: str, reservation_id: str, status: ReservationStatus, who: str,
               allowed: Sequence[ReservationStatus]) -> Reservation:
        try:
            self.t.table.update_item(
                Key={KEY: _pk(cluster), SORT: reservation_id}, UpdateExpression="SET #s = :s, decided_by = :w",
                ConditionExpression=Attr("status").is_in(list(allowed)), ExpressionAttributeNames={"#s": "status"},
                ExpressionAttributeValues={":s": status, ":w": who})
        except ClientError as e:
            if not conditional_failed(e):
                raise
            current = self.get(cluster, reservation_id)
            if current is None:
                raise UnknownReservation(f"no reservation {reservation_id} on {cluster}") from None
            raise ReservationNotPending(f"reservation {reservation_id} is {current.status}") from None
        rec = self.get(cluster, reservation_id)
        assert rec is not None
        return rec

    def mark(self, cluster: str, reservation_id: str, flag: str, at: datetime) -> bool:
        """Sets the flag (`started_at` / `ended_at`) unless it is set: True the first time only."""
        try:
            self.t.table.update_item(
                Key={KEY: _pk(cluster), SORT: reservation_id}, UpdateExpression="SET #f = :t",
                ConditionExpression=Attr(KEY).exists() & Attr(flag).not_exists(),
                ExpressionAttributeNames={"#f": flag}, ExpressionAttributeValues={":t": at.isoformat()})
        except ClientError as e:
            if conditional_failed(e):
                return False
            raise
        return True


def _of(item: dict[str, Any]) -> Reservation:
    what = f"reservation {printable(item.get(SORT))[:80]}"
    then = "cancel it (`rebalancer reservations cancel`) and reserve again"
    try:
        doc = json.loads(str(item["doc"]))
    except (KeyError, ValueError):
        doc = None
    return stored_model(Reservation, {**doc, **{name: item[name] for name in MUTABLE if name in item}}
                        if isinstance(doc, dict) else doc, what, then)
