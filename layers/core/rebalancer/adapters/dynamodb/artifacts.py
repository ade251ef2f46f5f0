"""A run's documents (snapshot, the cluster read again before an approved plan is written, the planning
context, plan and what it was made from, apply report, scheduler outcome, outlook, news), gzip'd: too big for Step
Functions' state, and in parts when too big for one item (Table.put_packed)."""

from __future__ import annotations

from typing import Any, Literal

from rebalancer.adapters.dynamodb.table import ARTIFACT_RETENTION, KEY, SORT, TTL, Table, epoch

Artifact = Literal["SNAPSHOT", "RECHECK", "CONTEXT", "PLAN", "BASIS", "APPLY", "SCHEDULER", "OUTLOOK", "NEWS"]


class TableArtifacts:
    def __init__(self, table: Table):
        self.t = table

    def put(self, execution: str, kind: Artifact, document: Any) -> None:
        self.t.put_packed({KEY: f"RUN#{execution}", SORT: kind, TTL: epoch(self.t.now() + ARTIFACT_RETENTION)},
                          document)

    def get(self, execution: str, kind: Artifact) -> Any:
        item = self.t.get(f"RUN#{execution}", kind)
        return None if item is None else self.t.unpacked(item)
