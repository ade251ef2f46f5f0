"""The audit log: one item per record, per cluster in time order. Records are shaped by
rebalancer.app.workflow.audit; this keeps and reads them."""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from typing import Any

from boto3.dynamodb.conditions import Key

from rebalancer.adapters.dynamodb.table import AUDIT_RETENTION, KEY, SORT, TTL, Table, epoch, unzip

# An audit field above this is stored gzip'd (`<field>_gz`): a plan of 1,000 teams x 15 types is ~0.5 MB of JSON,
# beyond DynamoDB's 400 KB item limit; compressed it is a small fraction of that. One whose gzip'd form is above
# AUDIT_GZ_MAX (a plan of 10,000 teams: ~1 MB) is stored in parts (Table.put_parts; `<field>_parts` and
# `<field>_digest` name them), so an item is at most four of these whatever the plan. `records` reads every form.
AUDIT_INLINE_MAX = 32 * 1024
AUDIT_GZ_MAX = 64 * 1024
FIELDS = ("who", "before", "after", "detail")
NEWEST_PAGE = 100  # records per Query page when reading newest first


class TableAudit:
    def __init__(self, table: Table):
        self.t = table

    def append(self, cluster_name: str, execution: str, kind: str, *, outcome: str, who: str | None = None,
               before: Any = None, after: Any = None, detail: Any = None) -> None:
        at = self.t.now()
        item: dict[str, Any] = {KEY: f"AUDIT#{cluster_name}", SORT: f"{at.isoformat()}#{execution}#{kind}",
                                "kind": kind, "execution": execution, "at": at.isoformat(), "outcome": outcome,
                                TTL: epoch(at + AUDIT_RETENTION)}
        for name, value in zip(FIELDS, (who, before, after, detail), strict=True):
            if value is None:
                continue
            text = json.dumps(value, sort_keys=True, default=str)
            if len(text) <= AUDIT_INLINE_MAX:
                item[name] = text
                continue
            packed = gzip.compress(text.encode())
            if len(packed) <= AUDIT_GZ_MAX:
                item[f"{name}_gz"] = packed
                continue
            named = self.t.put_parts(_parts_key(item, name), packed, item[TTL])
            item[f"{name}_parts"], item[f"{name}_digest"] = named["parts"], named["digest"]
        self.t.table.put_item(Item=item)

    def records(self, cluster_name: str) -> list[dict[str, Any]]:
        """Every audit record of a cluster, oldest first, with JSON fields decoded."""
        return [self._decoded(item) for item in self.t.query(Key(KEY).eq(f"AUDIT#{cluster_name}"))]

    def newest(self, cluster_name: str, page_size: int = NEWEST_PAGE) -> Iterator[dict[str, Any]]:
        """The cluster's audit records newest first, a page read only when the one before is used up: a reader that
        needs the last few runs of a year's log (`why`, within Slack's three seconds) stops after a page or two."""
        items = self.t.query(Key(KEY).eq(f"AUDIT#{cluster_name}"), ScanIndexForward=False, Limit=page_size)
        return (self._decoded(item) for item in items)

    def _decoded(self, item: dict[str, Any]) -> dict[str, Any]:
        rec = {k: v for k, v in item.items() if k not in (KEY, SORT, TTL)}
        for name in FIELDS:
            if f"{name}_parts" in rec:
                named = {"parts": rec.pop(f"{name}_parts"), "digest": rec.pop(f"{name}_digest", None)}
                packed = self.t.get_parts(_parts_key(item, name), named, f"{item[KEY]}/{item[SORT]} {name}")
                rec[name] = json.loads(gzip.decompress(packed))
            elif f"{name}_gz" in rec:
                rec[name] = json.loads(unzip(rec.pop(f"{name}_gz")))
            elif name in rec:
                rec[name] = json.loads(rec[name])
        return rec


def _parts_key(item: dict[str, Any], field: str) -> str:
    return f"PART#{item[KEY]}#{item[SORT]}#{field}"
