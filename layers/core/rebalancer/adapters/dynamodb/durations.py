"""The run history the estimated starts read (rebalancer.domain.outlook.RunHistory): the workloads running as the
last plan saw them, and the run durations of those seen to finish; one gzip'd item per cluster, replaced by each
plan step."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rebalancer.adapters.dynamodb.table import KEY, SORT, Table, pack, unpack

if TYPE_CHECKING:
    from rebalancer.domain.outlook import RunHistory


class TableDurations:
    def __init__(self, table: Table):
        self.t = table

    def history(self, cluster_name: str) -> RunHistory:
        from rebalancer.domain.outlook import RunHistory  # a pydantic model: only the plan step reads it

        item = self.t.get(f"CLUSTER#{cluster_name}", "RUN-HISTORY")
        return RunHistory() if item is None else RunHistory.model_validate(unpack(item["body"]))

    def record(self, cluster_name: str, history: RunHistory) -> None:
        self.t.table.put_item(Item={KEY: f"CLUSTER#{cluster_name}", SORT: "RUN-HISTORY",
                                    "body": pack(history.model_dump(mode="json"))})
