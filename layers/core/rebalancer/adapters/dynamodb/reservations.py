"""Reservations: one item per reservation under its cluster, and one version item per cluster. What never changes is
kept as the reservation's JSON; its status, decider, cancelled windows and announcement flags are attributes of
their own, so each changes with a conditional update (decided once, announced once).

A new reservation is written in one transaction with the cluster's version (`#VERSION`, moved one up): given the
version its check read, only while the version is still that one (rebalancer.app.reservations.reserve)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from boto3.dynamodb.conditions import Attr, Key
from botocore.exceptions import ClientError

from rebalancer.adapters.aws import classify, error_code
from rebalancer.adapters.dynamodb.table import AUDIT_RETENTION, KEY, SORT, TTL, Table, conditional_failed, epoch
from rebalancer.domain.reservation import Book, Flag, Reservation, ReservationStatus
from rebalancer.errors import ReservationNotPending, UnknownReservation
from rebalancer.parsing.text import printable
from rebalancer.parsing.validation import stored_model

MUTABLE = ("status", "decided_by", "started_at", "ended_at", "skipped", "announced")
VERSION = "#VERSION"  # the sort key of the cluster's version item: no reservation id starts with '#'
_CANCELLED = ("TransactionCanceledException", "TransactionConflictException")


def _pk(cluster: str) -> str:
    return f"RESERVATION#{cluster}"


class TableReservations:
    def __init__(self, table: Table):
        self.t = table

    def put(self, rec: Reservation, *, version: int | None = None) -> bool:
        """Stores a new reservation and moves the cluster's version one up, in one transaction; with `version`,
        only while the version is still that one. False when it moved, or when a reservation has this id."""
        doc = rec.model_dump(mode="json", exclude=set(MUTABLE))
        item: dict[str, Any] = {KEY: _pk(rec.cluster), SORT: rec.reservation_id, "doc": json.dumps(doc),
                                "status": rec.status, TTL: epoch(rec.until + AUDIT_RETENTION)}
        if rec.recurring:
            item["announced"] = {}  # the flags of its windows are entries of this map
        bump: dict[str, Any] = {"Key": {KEY: _pk(rec.cluster), SORT: VERSION},
                                "UpdateExpression": "SET #v = if_not_exists(#v, :zero) + :one",
                                "ExpressionAttributeNames": {"#v": "version"},
                                "ExpressionAttributeValues": {":zero": 0, ":one": 1}}
        if version is not None:
            bump["ConditionExpression"] = "attribute_not_exists(#v)" if version == 0 else "#v = :seen"
            if version:
                bump["ExpressionAttributeValues"] = {**bump["ExpressionAttributeValues"], ":seen": version}
        new = {"TableName": self.t.name, "Item": item, "ConditionExpression": f"attribute_not_exists({KEY})"}
        try:
            self.t.table.meta.client.transact_write_items(TransactItems=[
                {"Put": new}, {"Update": {"TableName": self.t.name, **bump}}])
        except ClientError as e:
            if error_code(e) in _CANCELLED and _conditions_only(e):
                return False
            raise classify("dynamodb:TransactWriteItems", f"reservations of {rec.cluster}", e) from e
        return True

    def book(self, cluster: str) -> Book:
        """The version first, then the reservations: a reservation stored after the version was read moved it on,
        so a write made on this reading fails rather than miss it."""
        held = self.t.get(_pk(cluster), VERSION)
        return Book(version=int(held["version"]) if held else 0, reservations=tuple(self.of_cluster(cluster)))

    def get(self, cluster: str, reservation_id: str) -> Reservation | None:
        item = self.t.get(_pk(cluster), reservation_id)
        return None if item is None else _of(item)

    def of_cluster(self, cluster: str) -> list[Reservation]:
        """The cluster's reservations, in id order."""
        return [_of(item) for item in self.t.query(Key(KEY).eq(_pk(cluster))) if item[SORT] != VERSION]

    def decide(self, cluster: str, reservation_id: str, status: ReservationStatus, who: str,
               allowed: Sequence[ReservationStatus]) -> Reservation:
        return self._update(cluster, reservation_id, allowed, "SET #s = :s, decided_by = :w",
                            {":s": status, ":w": who}, {"#s": "status"})

    def skip(self, cluster: str, reservation_id: str, occurrence: str,
             allowed: Sequence[ReservationStatus]) -> Reservation:
        """Adds `occurrence` to the windows cancelled one by one."""
        return self._update(cluster, reservation_id, allowed, "ADD skipped :o", {":o": {occurrence}}, {})

    def _update(self, cluster: str, reservation_id: str, allowed: Sequence[ReservationStatus], expression: str,
                values: dict[str, Any], names: dict[str, str]) -> Reservation:
        """Applies `expression` while the status is one of `allowed`; UnknownReservation or ReservationNotPending
        (naming the status) otherwise."""
        try:
            self.t.table.update_item(
                Key={KEY: _pk(cluster), SORT: reservation_id}, UpdateExpression=expression,
                ConditionExpression=Attr("status").is_in(list(allowed)), ExpressionAttributeValues=values,
                **({"ExpressionAttributeNames": names} if names else {}))
        except ClientError as e:
            if not conditional_failed(e):
                raise
            current = self.get(cluster, reservation_id)
            if current is None:
                raise UnknownReservation(f"no reservation {reservation_id} on {printable(cluster)}") from None
            raise ReservationNotPending(f"reservation {reservation_id} is {current.status}") from None
        rec = self.get(cluster, reservation_id)
        assert rec is not None
        return rec

    def mark(self, cluster: str, reservation_id: str, flag: Flag, at: datetime,
             occurrence: str | None = None) -> bool:
        """Sets the flag (of the one window, or of `occurrence` of a recurring one) to `at`, the time of the run that
        saw it, unless it is set: True the first time, and again for the same `at` (a retried step of that run)."""
        target, name = ("#f", f"{flag}_at") if occurrence is None else ("announced.#f", f"{occurrence}/{flag}")
        try:
            self.t.table.update_item(
                Key={KEY: _pk(cluster), SORT: reservation_id}, UpdateExpression=f"SET {target} = :t",
                ConditionExpression=f"attribute_exists(#k) AND (attribute_not_exists({target}) OR {target} = :t)",
                ExpressionAttributeNames={"#k": KEY, "#f": name}, ExpressionAttributeValues={":t": at.isoformat()})
        except ClientError as e:
            if conditional_failed(e):
                return False
            raise
        return True


def _conditions_only(e: ClientError) -> bool:
    """A cancelled transaction whose reasons are only failed conditions (or a conflict with another one)."""
    reasons = e.response.get("CancellationReasons") or [{"Code": "TransactionConflict"}]
    return all(r.get("Code") in ("None", "ConditionalCheckFailed", "TransactionConflict") for r in reasons)


def _of(item: dict[str, Any]) -> Reservation:
    what = f"reservation {printable(item.get(SORT))[:80]}"
    then = "cancel it (`rebalancer reservations cancel`) and reserve again"
    try:
        doc = json.loads(str(item["doc"]))
    except (KeyError, ValueError):
        doc = None
    if not isinstance(doc, dict):
        return stored_model(Reservation, doc, what, then)
    mutable = {name: item[name] for name in MUTABLE if name in item}
    if "skipped" in mutable:
        mutable["skipped"] = tuple(sorted(mutable["skipped"]))
    return stored_model(Reservation, {**doc, **mutable}, what, then)
