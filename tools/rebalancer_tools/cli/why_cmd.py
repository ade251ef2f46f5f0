"""`rebalancer why --cluster C --team T`: the team's quota per type and the reason of its last change, each pending
workload and why it waits, and what would let it start, read from what the controller stored (its table: the latest
run's snapshot and plan, the audit log), as the Slack command `/rebalancer why <team>` answers. Works against real
AWS (your credentials) and the sandbox (AWS_ENDPOINT_URL, REBALANCER_TABLE)."""

from __future__ import annotations

import json

import click

from rebalancer.errors import PermanentError
from rebalancer.parsing.text import printable
from rebalancer_tools.cli.history_cmd import open_store, table_options


@click.command()
@table_options
@click.option("--team", required=True, help="The team (as its quota's TeamName).")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
def why(cluster: str, table: str | None, stack: str | None, region: str | None, profile: str | None, team: str,
        fmt: str) -> None:
    """Why the team's work is pending and why its quota last changed."""
    from botocore.exceptions import BotoCoreError, ClientError

    from rebalancer.app.why import why as explain

    store = open_store(table, stack, region, profile)
    try:
        answer = explain(store, cluster, team.strip())
    except ClientError as e:
        err = e.response.get("Error", {})
        raise PermanentError(f"reading the table {store.table_name}: {err.get('Code')}: {err.get('Message')}") \
            from None
    except BotoCoreError as e:
        raise PermanentError(f"reading the table {store.table_name}: {e}") from None
    if fmt == "json":
        click.echo(json.dumps(answer.model_dump(mode="json"), indent=2, sort_keys=True))
        return
    for line in answer.lines():
        click.echo(printable(line))
