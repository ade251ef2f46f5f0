"""The versions our writes left, per team (and `(cluster)` for the scheduler config): a later plan tells a console
edit from our own change."""

from __future__ import annotations

from boto3.dynamodb.conditions import Key

from rebalancer.adapters.dynamodb.table import KEY, SORT, Table


class TableVersions:
    def __init__(self, table: Table):
        self.t = table

    def record(self, cluster_name: str, versions: dict[str, int], execution: str) -> None:
        at = self.t.now().isoformat()
        for name, version in sorted(versions.items()):
            self.t.table.put_item(Item={KEY: f"CLUSTER#{cluster_name}", SORT: f"VERSION#{name}",
                                        "version": int(version), "execution": execution, "at": at})

    def known(self, cluster_name: str) -> dict[str, int]:
        items = self.t.query(Key(KEY).eq(f"CLUSTER#{cluster_name}") & Key(SORT).begins_with("VERSION#"))
        return {str(i[SORT]).removeprefix("VERSION#"): int(i["version"]) for i in items}
