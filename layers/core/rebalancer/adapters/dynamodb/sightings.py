"""What runs and the trigger saw of a cluster between runs: since when each node has been unavailable for now
(the capacity grace expires on it), and the time of the latest cluster event the trigger received (a gap after it
is replayed from ListClusterEvents)."""

from __future__ import annotations

from datetime import UTC, datetime

from boto3.dynamodb.conditions import Attr
from botocore.exceptions import ClientError

from rebalancer.adapters.dynamodb.table import KEY, SORT, Table, conditional_failed
from rebalancer.errors import TransientError


class TableSightings:
    def __init__(self, table: Table):
        self.t = table

    def unavailable(self, cluster_name: str) -> dict[str, tuple[str, datetime]]:
        item = self.t.get(f"CLUSTER#{cluster_name}", "UNAVAILABLE")
        if item is None:
            return {}
        # `nodes`, a map in the item: as a version before the packed record wrote it
        nodes = item["nodes"] if "nodes" in item else self.t.unpacked(item)
        return {str(n): (str(v["state"]), datetime.fromisoformat(str(v["since"]))) for n, v in nodes.items()}

    def record_unavailable(self, cluster_name: str, nodes: dict[str, tuple[str, datetime]]) -> None:
        """Replaces the cluster's record: a node no longer listed is no longer unavailable. gzip'd, in parts when
        larger (Table.put_packed): at about 80 bytes a node, 5,000 nodes unavailable at once would pass an item's
        400 KB, 2 % of a cluster of 10,000 teams' 222,500 nodes."""
        self.t.put_packed({KEY: f"CLUSTER#{cluster_name}", SORT: "UNAVAILABLE"}, {
            n: {"state": state, "since": since.isoformat()} for n, (state, since) in sorted(nodes.items())})

    def last_event(self, cluster_name: str) -> datetime | None:
        item = self.t.get(f"CLUSTER#{cluster_name}", "LAST-EVENT")
        return datetime.fromisoformat(str(item["at"])) if item else None

    def saw_event(self, cluster_name: str, at: datetime) -> None:
        """Moves the mark forward only: an event delivered late does not hide a gap after a later one."""
        stamp = at.astimezone(UTC).isoformat()  # one zone and format: the condition compares strings
        try:
            self.t.table.put_item(Item={KEY: f"CLUSTER#{cluster_name}", SORT: "LAST-EVENT", "at": stamp},
                                  ConditionExpression=Attr(KEY).not_exists() | Attr("at").lt(stamp))
        except ClientError as e:
            if not conditional_failed(e):
                raise TransientError(f"DynamoDB PutItem (last event of {cluster_name}): {e}") from e
