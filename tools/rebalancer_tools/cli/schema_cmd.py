"""`rebalancer schema snapshot|policy`: the JSON schemas of the two input files."""

from __future__ import annotations

import json

import click
from pydantic import BaseModel

from rebalancer.domain.policy import Policy
from rebalancer.domain.snapshot import Snapshot

MODELS: dict[str, type[BaseModel]] = {"snapshot": Snapshot, "policy": Policy}


@click.command()
@click.argument("kind", type=click.Choice(sorted(MODELS)))
def schema(kind: str) -> None:
    """Print the JSON schema of a snapshot or a policy file."""
    click.echo(json.dumps(MODELS[kind].model_json_schema(), indent=2))
