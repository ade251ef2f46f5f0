"""The cluster's policy from SSM Parameter Store or from an AWS AppConfig hosted configuration (Powertools
Parameters, cached), validated with the foundation's model. Any problem is an InvalidInput naming where the policy
was read and the field.

SSM parameters hold at most 8 KB (about 150 teams); an AppConfig hosted configuration holds 1 MB, is checked by the
profile's JSON-schema validator before it is deployed and rolls back on the environment's alarm."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from aws_lambda_powertools.utilities import parameters
from aws_lambda_powertools.utilities.parameters.exceptions import GetParameterError

from rebalancer.app.config import PlanConfig
from rebalancer.domain.policy import Policy
from rebalancer.errors import InvalidInput
from rebalancer.parsing.loading import POLICY_MAX_BYTES, load_text

CACHE_SECONDS = 60


def load_policy(parameter_name: str, *, provider: Any = None) -> Policy:
    source = f"ssm:{parameter_name}"
    try:
        if provider is not None:
            text = provider.get(parameter_name, max_age=CACHE_SECONDS)
        else:
            text = parameters.get_parameter(parameter_name, max_age=CACHE_SECONDS)
    except GetParameterError as e:
        raise InvalidInput(f"cannot read the policy parameter: {e}", source=source) from None
    if not isinstance(text, str) or not text.strip():
        raise InvalidInput("the policy parameter is empty", source=source)
    return load_text(Policy, text, source, max_bytes=POLICY_MAX_BYTES)


def load_appconfig_policy(application: str, environment: str, profile: str, *, provider: Any = None) -> Policy:
    """The configuration deployed to `environment` of `profile` (AppConfig Data: a session, then the latest
    configuration; Powertools keeps the session token and the last value between polls)."""
    source = f"appconfig:{application}/{environment}/{profile}"
    try:
        if provider is not None:
            data = provider.get(profile, max_age=CACHE_SECONDS)
        else:
            data = parameters.get_app_config(name=profile, environment=environment, application=application,
                                             max_age=CACHE_SECONDS)
    except GetParameterError as e:
        raise InvalidInput(f"cannot read the policy configuration: {e}", source=source) from None
    if not isinstance(data, bytes | str) or not data.strip():
        raise InvalidInput("no policy deployed (the configuration is empty)", source=source)
    return load_text(Policy, data, source, max_bytes=POLICY_MAX_BYTES)  # bytes: decoded as UTF-8, a bad byte named


def policy_loader(cfg: PlanConfig) -> Callable[[str], Policy]:
    """cluster name → its policy, from the source the stack was deployed with."""
    if cfg.policy_source == "ssm":
        return lambda cluster: load_policy(cfg.policy_parameter(cluster))
    served = cfg.managed_clusters[0]

    def from_appconfig(cluster: str) -> Policy:
        if cluster != served:
            raise InvalidInput(f"PolicySource=appconfig serves the policy of the stack's first cluster ({served}) "
                               f"only; deploy one stack per cluster, or use PolicySource=ssm",
                               source="environment", field="MANAGED_CLUSTERS", value=cluster)
        return load_appconfig_policy(cfg.appconfig_application, cfg.appconfig_environment, cfg.appconfig_profile)

    return from_appconfig
