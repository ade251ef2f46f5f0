"""Demand samples (rebalancer.domain.sample), the history a policy is backtested on: observe writes one per
cluster every few minutes, kept for the history retention."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from boto3.dynamodb.conditions import Key

from rebalancer.adapters.dynamodb.table import HISTORY_RETENTION, KEY, SORT, TTL, Table, epoch

if TYPE_CHECKING:
    from rebalancer.domain.sample import DemandSample


class TableSamples:
    def __init__(self, table: Table):
        self.t = table

    def put(self, sample: DemandSample, retention: timedelta = HISTORY_RETENTION) -> None:
        """One sample per cluster and time; a retried observe overwrites its own sample, nothing else."""
        self.t.put_packed({KEY: f"SAMPLE#{sample.cluster}", SORT: sample.at.astimezone(UTC).isoformat(),
                           TTL: epoch(sample.at + retention)}, sample.model_dump(mode="json"))

    def since(self, cluster_name: str, since: datetime | None = None) -> Iterator[DemandSample]:
        """The cluster's samples, oldest first (from `since` on)."""
        condition: Any = Key(KEY).eq(f"SAMPLE#{cluster_name}")
        if since is not None:
            condition = condition & Key(SORT).gte(since.astimezone(UTC).isoformat())
        from rebalancer.domain.sample import DemandSample  # a pydantic model: only observe and the backtest read it

        for item in self.t.query(condition):
            yield DemandSample.model_validate_json(self.t.unpacked_json(item))
