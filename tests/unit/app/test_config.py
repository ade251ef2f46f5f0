from __future__ import annotations

import pytest

from rebalancer.app import config
from rebalancer.errors import InvalidInput

BASE = {"TABLE_NAME": "t", "MANAGED_CLUSTERS": "a, b", "POLICY_PARAMETER_PREFIX": "/p/", "MODE_OVERRIDE": ""}


def test_the_environment_parses_into_the_model() -> None:
    cfg = config.parse(config.TriggerConfig, {**BASE, "STATE_MACHINE_ARN": "arn:sm", "LOCK_TTL_SECONDS": "60",
                                              "DEBOUNCE_SECONDS": "120", "EVENT_GAP_SECONDS": "1800"})
    assert cfg.managed_clusters == ("a", "b")
    assert cfg.policy_parameter("a") == "/p/a"
    assert (cfg.lock_ttl_seconds, cfg.debounce_seconds, cfg.event_gap_seconds) == (60, 120, 1800)


@pytest.mark.parametrize(("env", "field"), [
    ({k: v for k, v in BASE.items() if k != "TABLE_NAME"}, "TABLE_NAME"),
    ({**BASE, "TABLE_NAME": "  "}, "TABLE_NAME"),
    ({**BASE, "MANAGED_CLUSTERS": " , "}, "MANAGED_CLUSTERS"),
    ({**BASE, "MODE_OVERRIDE": "yolo"}, "MODE_OVERRIDE"),
])
def test_a_missing_or_empty_value_fails_loudly_naming_the_variable(env: dict[str, str], field: str) -> None:
    with pytest.raises(InvalidInput) as e:
        config.parse(config.EnvConfig, env)
    assert e.value.field == field
    assert str(e.value).startswith(f"environment: {field}: ")
