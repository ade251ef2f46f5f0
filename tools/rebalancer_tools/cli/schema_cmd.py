"""`rebalancer schema snapshot|policy`: the JSON schemas of the two input files; `schema policy --appconfig`: the
policy schema as AppConfig's JSON_SCHEMA validator reads it (draft 4), `--write-template` writes it into the
template's validator."""

from __future__ import annotations

import json

import click
from pydantic import BaseModel

from rebalancer.domain.policy import Policy
from rebalancer.domain.snapshot import Snapshot
from rebalancer.errors import InvalidInput

MODELS: dict[str, type[BaseModel]] = {"snapshot": Snapshot, "policy": Policy}


@click.command()
@click.argument("kind", type=click.Choice(sorted(MODELS)))
@click.option("--appconfig", is_flag=True, help="The policy schema in JSON Schema draft 4, as AppConfig validates.")
@click.option("--write-template", is_flag=True, help="With --appconfig: write it into template.yaml's validator.")
def schema(kind: str, appconfig: bool, write_template: bool) -> None:
    """Print the JSON schema of a snapshot or a policy file."""
    if not appconfig:
        if write_template:
            raise InvalidInput("needs --appconfig", field="--write-template")
        click.echo(json.dumps(MODELS[kind].model_json_schema(), indent=2))
        return
    if kind != "policy":
        raise InvalidInput("AppConfig holds the policy only", field="--appconfig", value=kind)
    from rebalancer_tools.packaging import appconfig_policy
    from rebalancer_tools.packaging.template import find_root

    if write_template:
        path = find_root() / "template.yaml"
        changed = appconfig_policy.write_template(path)
        click.echo(f"{path}: {'validator written' if changed else 'validator already current'}", err=True)
        return
    click.echo(json.dumps(appconfig_policy.validator_schema(), indent=2))
