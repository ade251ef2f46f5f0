"""Each function's environment, parsed once at cold start into a frozen dataclass that fails loudly on a missing or
empty value.

Names are the environment variables the template sets (template.yaml Globals and each function's Environment).
Plain dataclasses, not pydantic: every handler reads its environment, and the trigger's cold start (its whole path
is pydantic-free) would otherwise pay for pydantic's import and schema building to read seven strings.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import Any, TypeVar

from rebalancer.errors import InvalidInput

MODES = ("", "auto", "approve", "dry-run")
Reader = Callable[[str], Any]


def _non_empty(raw: str) -> str:
    value = raw.strip()
    if not value:
        raise ValueError("must not be empty")
    return value


def _clusters(raw: str) -> tuple[str, ...]:
    names = tuple(n.strip() for n in raw.split(",") if n.strip())
    if not names:
        raise ValueError("must name at least one cluster (comma-separated)")
    return names


def _mode(raw: str) -> str:
    if raw not in MODES:
        raise ValueError(f"must be one of {', '.join(repr(m) for m in MODES)}")
    return raw


def _integer(minimum: int) -> Reader:
    def read(raw: str) -> int:
        try:
            value = int(raw.strip())
        except ValueError:
            raise ValueError("must be a whole number") from None
        if value < minimum:
            raise ValueError(f"must be at least {minimum}")
        return value

    return read


def env(name: str, read: Reader = str, default: Any = dataclasses.MISSING) -> Any:
    """A field read from the environment variable `name`; without a default the variable is required."""
    return field(default=default, metadata={"env": name, "read": read})


def env_name(model: type[EnvConfig], field_name: str) -> str:
    """The environment variable a field is read from."""
    return str(next(f for f in dataclasses.fields(model) if f.name == field_name).metadata["env"])


@dataclass(frozen=True, kw_only=True)
class EnvConfig:
    table_name: str = env("TABLE_NAME", _non_empty)
    managed_clusters: tuple[str, ...] = env("MANAGED_CLUSTERS", _clusters)
    policy_parameter_prefix: str = env("POLICY_PARAMETER_PREFIX", _non_empty)
    mode_override: str = env("MODE_OVERRIDE", _mode, default="")

    def policy_parameter(self, cluster_name: str) -> str:
        return f"{self.policy_parameter_prefix.rstrip('/')}/{cluster_name}"


@dataclass(frozen=True, kw_only=True)
class TriggerConfig(EnvConfig):
    state_machine_arn: str = env("STATE_MACHINE_ARN", _non_empty)
    lock_ttl_seconds: int = env("LOCK_TTL_SECONDS", _integer(1))
    debounce_seconds: int = env("DEBOUNCE_SECONDS", _integer(1))


@dataclass(frozen=True, kw_only=True)
class ObserveConfig(EnvConfig):
    # How long the demand samples (the backtest's history) are kept: their DynamoDB TTL.
    history_retention_days: int = env("HISTORY_RETENTION_DAYS", _integer(1))


@dataclass(frozen=True, kw_only=True)
class VerifyConfig(EnvConfig):
    poll_seconds: int = env("VERIFY_POLL_SECONDS", _integer(0))
    max_attempts: int = env("VERIFY_MAX_ATTEMPTS", _integer(1))


@dataclass(frozen=True, kw_only=True)
class NotifyConfig(EnvConfig):
    topic_arn: str = env("TOPIC_ARN", _non_empty)
    slack_webhook_secret_arn: str = env("SLACK_WEBHOOK_SECRET_ARN", default="")


@dataclass(frozen=True, kw_only=True)
class ApprovalConfig(NotifyConfig):
    slack_signing_secret_arn: str = env("SLACK_SIGNING_SECRET_ARN", default="")
    approval_signing_secret_arn: str = env("APPROVAL_SIGNING_SECRET_ARN", _non_empty)
    # The issuer of the approval API's JWT authorizer, set by the template only when the authorizer is on: then the
    # token's claims name the approver. Empty: the link is the credential and the approver types a name.
    approval_oidc_issuer: str = env("APPROVAL_OIDC_ISSUER", default="")


C = TypeVar("C", bound=EnvConfig)


def parse(model: type[C], environ: Mapping[str, str]) -> C:
    """Every field from its variable; the first missing or invalid one is an InvalidInput naming it and its value."""
    values: dict[str, Any] = {}
    for f in dataclasses.fields(model):
        name, read = f.metadata["env"], f.metadata["read"]
        raw = environ.get(name)
        if raw is None:
            if f.default is dataclasses.MISSING:
                raise InvalidInput("is required and not set", source="environment", field=name)
            values[f.name] = f.default
            continue
        try:
            values[f.name] = read(raw)
        except ValueError as e:
            raise InvalidInput(f"{e} (got {raw[:80]!r})", source="environment", field=name, value=raw) from None
    return model(**values)


@cache
def load(model: type[C]) -> C:
    """Parsed once per process (a Lambda cold start); tests call `load.cache_clear()` after changing the env."""
    return parse(model, os.environ)
