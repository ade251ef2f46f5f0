"""Which notifications of a run went out on which channel, so a retried Notify resends only what failed."""

from __future__ import annotations

from rebalancer.adapters.dynamodb.table import ARTIFACT_RETENTION, KEY, SORT, TTL, Table, epoch


class TableDeliveries:
    def __init__(self, table: Table):
        self.t = table

    def mark(self, execution: str, kind: str, channel: str) -> bool:
        """True the first time; False when this notification already went out on this channel."""
        now = self.t.now()
        return self.t.put_new({KEY: f"RUN#{execution}", SORT: f"DELIVERED#{kind}#{channel}", "at": now.isoformat(),
                               TTL: epoch(now + ARTIFACT_RETENTION)})

    def unmark(self, execution: str, kind: str, channel: str) -> None:
        self.t.table.delete_item(Key={KEY: f"RUN#{execution}", SORT: f"DELIVERED#{kind}#{channel}"})
