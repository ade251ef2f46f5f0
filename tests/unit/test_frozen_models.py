"""One Frozen base for the domain's models: each pydantic model of rebalancer.domain is Frozen, or an AWS shape (which
keeps the fields AWS adds); the base refuses edits, unknown fields and non-finite numbers."""

from __future__ import annotations

import importlib
import math

import pytest
from pydantic import BaseModel, ValidationError
from support.import_graph import MODULES

from rebalancer.domain.frozen import Frozen
from rebalancer.domain.pools import PoolKey
from rebalancer.domain.sample import PoolUse
from rebalancer.domain.snapshot import AwsShape, Resources

DOMAIN = sorted(m for m in MODULES if m.startswith("rebalancer.domain."))


def _models() -> dict[str, type[BaseModel]]:
    found = {}
    for name in DOMAIN:
        module = importlib.import_module(name)
        for value in vars(module).values():
            if isinstance(value, type) and issubclass(value, BaseModel) and value.__module__ == name:
                found[f"{name}.{value.__qualname__}"] = value
    return found


def test_every_domain_model_is_frozen_or_an_aws_shape() -> None:
    models = _models()
    assert len(models) > 20  # the finder sees the domain's models
    assert [n for n, cls in models.items() if not issubclass(cls, Frozen | AwsShape)] == []


def test_a_frozen_model_refuses_edits_unknown_fields_and_non_finite_numbers() -> None:
    key = PoolKey(instance_type="ml.p5.48xlarge")
    with pytest.raises(ValidationError, match="frozen"):
        key.instance_type = "ml.p4d.24xlarge"  # type: ignore[misc]
    with pytest.raises(ValidationError, match="Extra inputs are not permitted"):
        PoolKey.model_validate({"instance_type": "ml.p5.48xlarge", "typo": 1})
    for value in (math.inf, math.nan):
        with pytest.raises(ValidationError, match="finite number"):
            Resources(accelerators=value)
        with pytest.raises(ValidationError, match="finite number"):
            PoolUse(quota=value)
    assert hash(key) == hash(PoolKey(instance_type="ml.p5.48xlarge"))
