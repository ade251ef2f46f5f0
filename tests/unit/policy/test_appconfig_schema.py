"""The policy schema as AppConfig's JSON_SCHEMA validator reads it (draft 4): it is a valid draft-4 schema, the
template's validator holds exactly it (regenerate with `rebalancer schema policy --appconfig --write-template`), it
fits the validator's 32,768 characters, it accepts every policy the loader accepts (examples, the docs, a fuzz corpus)
once pushed as JSON, and it refuses what is wrong in shape, naming where."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st
from support import docs
from support.fuzz import fuzz, mutated
from support.template import template

from rebalancer.domain.policy import Policy
from rebalancer.errors import InvalidInput
from rebalancer.parsing.validation import load_model
from rebalancer_tools.cli import cli
from rebalancer_tools.packaging import appconfig_policy as ac

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = sorted((ROOT / "examples").glob("*policy*.yaml"))
VALIDATOR = jsonschema.Draft4Validator(ac.validator_schema())


def docs_policies() -> list[Any]:
    return [yaml.safe_load(block) for block in docs.policies()]


CORPUS = [yaml.safe_load(p.read_text()) for p in EXAMPLES] + docs_policies()


def loader_accepts(doc: Any) -> bool:
    try:
        load_model(Policy, doc, "policy.yaml")
    except InvalidInput:
        return False
    return True


def leaves(error: jsonschema.ValidationError) -> list[jsonschema.ValidationError]:
    return [leaf for sub in error.context for leaf in leaves(sub)] if error.context else [error]


def errors(doc: Any) -> list[str]:
    as_pushed = json.loads(json.dumps(doc, default=str))
    return [f"{'.'.join(map(str, e.absolute_path))}: {e.message}"
            for error in VALIDATOR.iter_errors(as_pushed) for e in leaves(error)]


def test_it_is_a_draft_4_schema_within_the_validators_limit() -> None:
    jsonschema.Draft4Validator.check_schema(ac.validator_schema())
    assert ac.validator_schema()["$schema"] == "http://json-schema.org/draft-04/schema#"
    assert len(ac.validator_content()) <= 32768
    assert "$defs" not in ac.validator_content()


def test_the_template_validator_is_the_generated_schema() -> None:
    profile = template()["Resources"]["PolicyConfigurationProfile"]["Properties"]
    [validator] = profile["Validators"]
    assert validator["Type"] == "JSON_SCHEMA"
    assert json.loads(validator["Content"]) == ac.validator_schema(), \
        "run `rebalancer schema policy --appconfig --write-template`"


def test_write_template_rewrites_a_stale_validator_and_then_has_nothing_to_do(tmp_path: Path) -> None:
    stale = tmp_path / "template.yaml"
    stale.write_text("Content: |- # policy schema, draft 4\n  {\"type\":\"object\"}\n")
    assert ac.write_template(stale) is True
    assert json.loads(stale.read_text().splitlines()[1]) == ac.validator_schema()
    assert ac.write_template(stale) is False


def test_the_cli_prints_it() -> None:
    result = CliRunner().invoke(cli, ["schema", "policy", "--appconfig"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == ac.validator_schema()


@pytest.mark.parametrize(("node", "expected"), [
    ({"exclusiveMinimum": 0}, {"minimum": 0, "exclusiveMinimum": True}),
    ({"exclusiveMaximum": 1.5}, {"maximum": 1.5, "exclusiveMaximum": True}),
    ({"const": "x"}, {"enum": ["x"]}),
    ({"$ref": "#/$defs/Team"}, {"$ref": "#/definitions/Team"}),
    ({"$defs": {"A": {"const": 1}}}, {"definitions": {"A": {"enum": [1]}}}),
    ({"prefixItems": [{"type": "string"}], "items": False},
     {"items": [{"type": "string"}], "additionalItems": False}),
    ({"properties": {"const": {"type": "string"}}}, {"properties": {"const": {"type": "string"}}}),
])
def test_later_drafts_words_become_draft_4s(node: dict[str, Any], expected: dict[str, Any]) -> None:
    assert ac.draft4(node) == expected


def test_a_keyword_draft_4_cannot_say_is_refused_rather_than_dropped() -> None:
    with pytest.raises(ValueError, match="propertyNames"):
        ac.draft4({"properties": {"a": {"propertyNames": {"pattern": "x"}}}})


@pytest.mark.parametrize("doc", CORPUS, ids=range(len(CORPUS)))
def test_every_example_and_readme_policy_passes_the_validator(doc: Any) -> None:
    assert loader_accepts(doc)
    assert errors(doc) == []


@fuzz(max_examples=200)
@given(st.sampled_from(CORPUS).flatmap(mutated))
def test_the_validator_never_refuses_what_the_loader_accepts(doc: Any) -> None:
    if loader_accepts(doc):
        assert errors(doc) == [], doc


BASE = {"teams": {"a": {"weight": 1, "guarantee": {"ml.p5.48xlarge": "25%"}}}}


@pytest.mark.parametrize(("change", "where"), [
    ({"mode": "fast"}, "mode"),
    ({"stability": {"min_step": -1}}, "stability.min_step"),
    ({"teams": {"a": {"guarantee": {"ml.p5.48xlarge": "150%"}}}}, "teams.a.guarantee.ml.p5.48xlarge"),
    ({"teams": {"a": {"wieght": 1}}}, "teams.a"),
    ({"teams": {"a": {"fair_share_weight": 101}}}, "teams.a.fair_share_weight"),
    ({"teams": "a"}, "teams"),
])
def test_what_is_wrong_in_shape_the_validator_refuses_naming_where(change: dict[str, Any], where: str) -> None:
    doc = {**BASE, **change}
    assert not loader_accepts(doc)
    found = errors(doc)
    assert any(e.startswith(f"{where}:") for e in found), found
