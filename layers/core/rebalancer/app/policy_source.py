"""The cluster's policy from SSM Parameter Store (Powertools Parameters, cached), validated with the foundation's
model. Any problem is an InvalidInput naming the parameter and the field."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities import parameters
from aws_lambda_powertools.utilities.parameters.exceptions import GetParameterError

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
