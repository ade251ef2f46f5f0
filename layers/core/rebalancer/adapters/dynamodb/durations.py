"""The run history the estimated starts read (rebalancer.domain.outlook.RunHistory): the workloads running as the
last plan saw them, and the run durations of those seen to finish; one gzip'd item per cluster, replaced by each
plan step, made smaller where it would not fit one."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rebalancer.adapters.dynamodb.table import KEY, SORT, Table, pack, unpack

if TYPE_CHECKING:
    from rebalancer.domain.outlook import RunHistory


HISTORY_BYTES = 300 * 1024  # of the item's 400 KB: room for its keys, and a margin


class TableDurations:
    def __init__(self, table: Table):
        self.t = table

    def history(self, cluster_name: str) -> RunHistory:
        from rebalancer.domain.outlook import RunHistory  # a pydantic model: only the plan step reads it

        item = self.t.get(f"CLUSTER#{cluster_name}", "RUN-HISTORY")
        return RunHistory() if item is None else RunHistory.model_validate(unpack(item["body"]))

    def record(self, cluster_name: str, history: RunHistory) -> None:
        """Kept whole when it fits HISTORY_BYTES gzip'd, else halved (RunHistory.halved) until it does: at 1,000
        teams with 50 runs each and 10,000 running the whole is above an item's 400 KB."""
        body = pack(history.model_dump(mode="json"))
        while len(body) > HISTORY_BYTES:
            smaller = history.halved()
            if smaller is None:
                break
            history, body = smaller, pack(smaller.model_dump(mode="json"))
        self.t.table.put_item(Item={KEY: f"CLUSTER#{cluster_name}", SORT: "RUN-HISTORY", "body": body})
