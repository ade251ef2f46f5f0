"""The run history the estimated starts read (rebalancer.domain.outlook.RunHistory): the workloads running as the
last plan saw them, and the run durations of those seen to finish; one gzip'd item per cluster, replaced by each
plan step, made smaller where it would not fit one: it is never written larger than HISTORY_BYTES, whatever the
number of teams and whatever a tenant floods it with."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from rebalancer.adapters.aws import aws_call
from rebalancer.adapters.dynamodb.table import KEY, SORT, Table, item_bytes, pack, unpack
from rebalancer.parsing.validation import stored_model

if TYPE_CHECKING:
    from rebalancer.domain.outlook import RunHistory


HISTORY_BYTES = 300 * 1024  # of the 400 KB DynamoDB takes in an item, keys and names included: a margin


class TableDurations:
    def __init__(self, table: Table):
        self.t = table

    def history(self, cluster_name: str) -> RunHistory:
        from rebalancer.domain.outlook import RunHistory  # a pydantic model: only the plan step reads it

        item = self.t.get(f"CLUSTER#{cluster_name}", "RUN-HISTORY")
        if item is None:
            return RunHistory()
        return stored_model(RunHistory, unpack(item["body"]), f"the run history of cluster {cluster_name}",
                            "the next plan step replaces it")

    def record(self, cluster_name: str, history: RunHistory) -> None:
        """Kept whole when the item fits HISTORY_BYTES, else the largest of its halvings (RunHistory.halved, down
        to an empty history) that fits: at 1,000 teams with 50 runs each and 10,000 running the whole is above an
        item's 400 KB, at 10,000 teams one run and one ratio each are. Found by bisection, gzip'd at level 1 (at
        10,000 teams the whole is 13 MB of JSON: 0.2 s to gzip at level 1, 2.5 s at 9 for a tenth less), and the
        item written is the one measured. A failed write leaves as aws_call classifies it."""
        key = {KEY: f"CLUSTER#{cluster_name}", SORT: "RUN-HISTORY"}

        def item(h: RunHistory) -> dict[str, Any]:
            return {**key, "body": pack(h.model_dump(mode="json"), level=1)}

        whole = item(history)
        if item_bytes(whole) > HISTORY_BYTES:
            whole = _largest_fitting(history, item, lambda i: item_bytes(i) <= HISTORY_BYTES)
        with aws_call("dynamodb:PutItem", f"table {self.t.name}"):
            self.t.table.put_item(Item=whole)


def _largest_fitting(history: RunHistory, item: Callable[[RunHistory], dict[str, Any]],
                     fits: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
    """The item of the first of the history's halvings (each a part of the one before, the last empty) that `fits`,
    by bisection: about log2 of their number (some 50 at 10,000 teams) are made."""
    halvings = [history]
    while (smaller := halvings[-1].halved()) is not None:
        halvings.append(smaller)
    low, high = 0, len(halvings) - 1  # halvings[low] does not fit (the caller measured it); the empty one fits
    best = item(halvings[high])
    while high - low > 1:
        middle = (low + high) // 2
        made = item(halvings[middle])
        if fits(made):
            high, best = middle, made
        else:
            low = middle
    return best
