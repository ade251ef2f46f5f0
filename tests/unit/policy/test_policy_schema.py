"""The JSON schema `rebalancer schema policy` publishes accepts every policy the loader accepts (the examples, the
docs', and a fuzz corpus of the example policies with one value replaced), so an editor or a CI check that
validates with it never refuses a valid policy; and it refuses what is wrong in shape (types, unknown keys, ranges,
team names, percents above 100), as the loader does."""

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

from rebalancer.domain.policy import Policy
from rebalancer.errors import InvalidInput
from rebalancer.parsing.validation import load_model
from rebalancer_tools.cli import cli

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = sorted((ROOT / "examples").glob("*policy*.yaml"))


def published() -> jsonschema.protocols.Validator:
    result = CliRunner().invoke(cli, ["schema", "policy"])
    assert result.exit_code == 0, result.output
    schema = json.loads(result.stdout)
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


VALIDATOR = published()


def docs_policies() -> list[Any]:
    return [yaml.safe_load(block) for block in docs.policies()]


def loader_accepts(doc: Any) -> bool:
    try:
        load_model(Policy, doc, "policy.yaml")
    except InvalidInput:
        return False
    return True


def leaves(error: jsonschema.ValidationError) -> list[jsonschema.ValidationError]:
    """An `anyOf` (an optional field is `X or null`) reports itself; the branches say what is wrong."""
    return [leaf for sub in error.context for leaf in leaves(sub)] if error.context else [error]


def schema_errors(doc: Any) -> list[str]:
    return [f"{'.'.join(map(str, e.absolute_path))}: {e.message}"
            for error in VALIDATOR.iter_errors(doc) for e in leaves(error)]


def test_there_are_example_and_docs_policies_to_check() -> None:
    assert len(EXAMPLES) >= 2
    assert len(docs_policies()) >= 2


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_every_example_policy_is_valid_for_both(path: Path) -> None:
    doc = yaml.safe_load(path.read_text())
    assert loader_accepts(doc)
    assert schema_errors(doc) == []


def test_every_docs_policy_is_valid_for_both() -> None:
    for doc in docs_policies():
        assert loader_accepts(doc), doc
        assert schema_errors(doc) == [], doc


CORPUS = [yaml.safe_load(p.read_text()) for p in EXAMPLES] + docs_policies()


@fuzz(max_examples=300)
@given(st.sampled_from(CORPUS).flatmap(mutated))
def test_the_schema_never_refuses_what_the_loader_accepts(doc: Any) -> None:
    if loader_accepts(doc):
        assert schema_errors(doc) == [], doc


BASE = {"teams": {"a": {"weight": 1, "guarantee": {"ml.p5.48xlarge": "25%"}}}}


@pytest.mark.parametrize(("change", "where"), [
    ({"mode": "fast"}, "mode"),
    ({"surplus": 3}, "surplus"),
    ({"stability": {"min_step": -1}}, "stability.min_step"),
    ({"approval": {"max_decrease_percent": 150}}, "approval.max_decrease_percent"),
    ({"approval": {"moved": 3}}, "approval"),
    ({"teams": {"a": {"guarantee": {"ml.p5.48xlarge": "150%"}}}}, "teams.a.guarantee.ml.p5.48xlarge"),
    ({"teams": {"a": {"guarantee": {"ml.p5.48xlarge": "lots"}}}}, "teams.a.guarantee.ml.p5.48xlarge"),
    ({"teams": {"a": {"cap": {"ml.p5.48xlarge": -2}}}}, "teams.a.cap.ml.p5.48xlarge"),
    ({"teams": {"a": {"wieght": 1}}}, "teams.a"),
    ({"teams": {"a": {"fair_share_weight": 101}}}, "teams.a.fair_share_weight"),
    ({"teams": {"a": {"sharing": {"strategy": "Borrow"}}}}, "teams.a.sharing.strategy"),
    ({"teams": "a"}, "teams"),
    ({"cluster": {"fair_share": "On"}}, "cluster.fair_share"),
])
def test_what_is_wrong_in_shape_both_refuse(change: dict[str, Any], where: str) -> None:
    doc = {**BASE, **change}
    assert not loader_accepts(doc)
    errors = schema_errors(doc)
    assert errors, doc
    assert any(e.startswith(f"{where}:") for e in errors), errors
