"""The plan step's policy from AppConfig: what the provider returns becomes the policy, anything else one line
naming where it was read; PolicySource=appconfig needs the three ids, and serves the stack's first cluster only."""

from __future__ import annotations

from typing import Any

import pytest
from aws_lambda_powertools.utilities.parameters.exceptions import GetParameterError

from rebalancer.app import config
from rebalancer.app.policy_source import load_appconfig_policy, policy_loader
from rebalancer.errors import InvalidInput

SOURCE = "appconfig:app1/env1/prof1"
BASE = {"TABLE_NAME": "t", "MANAGED_CLUSTERS": "c1, c2", "POLICY_PARAMETER_PREFIX": "/p", "TOPIC_ARN": "arn:t"}
APPCONFIG = {**BASE, "POLICY_SOURCE": "appconfig", "APPCONFIG_APPLICATION": "app1",
             "APPCONFIG_ENVIRONMENT": "env1", "APPCONFIG_PROFILE": "prof1"}


class Provider:
    def __init__(self, value: Any = None, error: Exception | None = None) -> None:
        self.value, self.error, self.asked = value, error, []

    def get(self, name: str, max_age: int) -> Any:
        self.asked.append((name, max_age))
        if self.error is not None:
            raise self.error
        return self.value


def test_the_deployed_bytes_are_the_policy() -> None:
    provider = Provider(b'{"mode": "dry-run", "teams": {"a": {"weight": 2}}}')
    policy = load_appconfig_policy("app1", "env1", "prof1", provider=provider)
    assert policy.teams["a"].weight == 2
    assert provider.asked == [("prof1", 60)]


def test_yaml_is_read_too() -> None:
    policy = load_appconfig_policy("app1", "env1", "prof1", provider=Provider(b"teams:\n  a: {weight: 1}\n"))
    assert set(policy.teams) == {"a"}


@pytest.mark.parametrize(("provider", "says"), [
    (Provider(b""), f"{SOURCE}: no policy deployed"),
    (Provider(error=GetParameterError("ResourceNotFoundException: no profile")),
     f"{SOURCE}: cannot read the policy configuration: ResourceNotFoundException"),
    (Provider(b'{"teams": {"a": {"weight": -1}}}'), f"{SOURCE}: teams.a.weight"),
    (Provider(b'{"teams": {"\xff": {}}}'), f"{SOURCE}: line 1, column 13: not UTF-8 text (byte 0xff)"),
])
def test_what_cannot_be_used_is_one_line_naming_the_source(provider: Provider, says: str) -> None:
    with pytest.raises(InvalidInput) as e:
        load_appconfig_policy("app1", "env1", "prof1", provider=provider)
    assert str(e.value).startswith(says), str(e.value)
    assert "\n" not in str(e.value)


def test_ssm_stays_the_default() -> None:
    cfg = config.parse(config.PlanConfig, BASE)
    assert cfg.policy_source == "ssm"
    assert policy_loader(cfg).__name__ == "<lambda>"


@pytest.mark.parametrize("missing", ["APPCONFIG_APPLICATION", "APPCONFIG_ENVIRONMENT", "APPCONFIG_PROFILE"])
def test_appconfig_needs_the_three_ids(missing: str) -> None:
    with pytest.raises(InvalidInput) as e:
        config.parse(config.PlanConfig, {**APPCONFIG, missing: " "})
    assert f"{missing} must be set when POLICY_SOURCE is appconfig" in str(e.value)


def test_an_unknown_source_names_the_variable() -> None:
    with pytest.raises(InvalidInput) as e:
        config.parse(config.PlanConfig, {**BASE, "POLICY_SOURCE": "s3"})
    assert e.value.field == "POLICY_SOURCE"


def test_appconfig_serves_the_stacks_first_cluster_only() -> None:
    load = policy_loader(config.parse(config.PlanConfig, APPCONFIG))
    with pytest.raises(InvalidInput) as e:
        load("c2")
    assert "serves the policy of the stack's first cluster (c1) only" in str(e.value)
    assert e.value.field == "MANAGED_CLUSTERS"
