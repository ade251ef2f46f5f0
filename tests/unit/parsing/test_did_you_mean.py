"""A policy key or an instance type one or two edits from a real one gets "did you mean …?" in its one line: the key
among those the model takes at that place in the document (not anywhere in it), the type among the catalog's."""

from __future__ import annotations

import pytest

from rebalancer.catalog import specs as catalog
from rebalancer.domain.policy import Policy
from rebalancer.errors import InvalidInput, UnknownInstanceType
from rebalancer.parsing.validation import allowed_keys, load_model


def said(doc: dict[str, object]) -> str:
    with pytest.raises(InvalidInput) as e:
        load_model(Policy, doc, "policy.yaml")
    return str(e.value)


def test_a_mistyped_key_is_matched_among_the_keys_of_its_own_place() -> None:
    assert said({"teams": {"research": {"weigth": 3}}}) == (
        "policy.yaml: teams.research.weigth: Extra inputs are not permitted (got 3); did you mean weight?")
    assert said({"stability": {"cooldwn_minutes": 30}, "teams": {"a": {}}}).endswith(
        "did you mean cooldown_minutes?")
    # `weight` is a team's key, not the stability section's: no suggestion from another place
    assert "did you mean" not in said({"stability": {"weigth": 1}, "teams": {"a": {}}})
    assert "did you mean" not in said({"teams": {"a": {"colour": "blue"}}})


def test_the_keys_at_a_place_are_the_models_there() -> None:
    assert {"weight", "guarantee", "cap"} <= allowed_keys(Policy, ("teams", "research"))
    assert "weight" not in allowed_keys(Policy, ())
    assert allowed_keys(Policy, ("teams", "research", "weight")) == set()  # a number has no keys


def test_an_instance_type_one_letter_short_gets_the_catalogs_name() -> None:
    with pytest.raises(UnknownInstanceType) as e:
        catalog.spec("ml.p5.48xlarg", field="--pool")
    assert str(e.value) == ("--pool: unknown instance type 'ml.p5.48xlarg' (not a SageMaker HyperPod "
                            "ClusterInstanceType this tool knows); did you mean ml.p5.48xlarge?")
    with pytest.raises(UnknownInstanceType) as e:
        catalog.spec("a-laptop")
    assert "did you mean" not in str(e.value)
    assert "did you mean ml.p5.48xlarge?" in said({"teams": {"a": {"guarantee": {"ml.p5.48xlarg": 8}}}})
