"""A run's documents (snapshot, plan, apply report, scheduler outcome, outlook), gzip'd: too big for Step Functions'
state."""

from __future__ import annotations

from typing import Any, Literal

from rebalancer.adapters.dynamodb.table import ARTIFACT_RETENTION, KEY, SORT, TTL, Table, epoch, pack, unpack

Artifact = Literal["SNAPSHOT", "PLAN", "APPLY", "SCHEDULER", "OUTLOOK"]


class TableArtifacts:
    def __init__(self, table: Table):
        self.t = table

    def put(self, execution: str, kind: Artifact, document: Any) -> None:
        self.t.table.put_item(Item={KEY: f"RUN#{execution}", SORT: kind, "body": pack(document),
                                    TTL: epoch(self.t.now() + ARTIFACT_RETENTION)})

    def get(self, execution: str, kind: Artifact) -> Any:
        item = self.t.get(f"RUN#{execution}", kind)
        return None if item is None else unpack(item["body"])
