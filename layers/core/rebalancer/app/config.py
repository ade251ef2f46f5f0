"""Each function's environment, parsed once at cold start into a model that fails loudly on a missing or empty value.

Names are the environment variables the template sets (template.yaml Globals and each function's Environment).
"""

import os
from collections.abc import Mapping
from functools import cache
from typing import Annotated, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError, field_validator, model_validator

from rebalancer.errors import InvalidInput
from rebalancer.parsing.validation import invalid_input

NonEmpty = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]


class EnvConfig(BaseModel):
    # Built when loaded: a handler reads one of these models and never builds the others.
    model_config = ConfigDict(frozen=True, extra="ignore", populate_by_name=True, defer_build=True)

    table_name: NonEmpty = Field(alias="TABLE_NAME")
    managed_clusters: tuple[str, ...] = Field(alias="MANAGED_CLUSTERS")
    policy_parameter_prefix: NonEmpty = Field(alias="POLICY_PARAMETER_PREFIX")
    mode_override: Literal["", "auto", "approve", "dry-run"] = Field("", alias="MODE_OVERRIDE")

    @field_validator("managed_clusters", mode="before")
    @classmethod
    def _split(cls, raw: object) -> object:
        if isinstance(raw, str):
            names = tuple(n.strip() for n in raw.split(",") if n.strip())
            if not names:
                raise ValueError("must name at least one cluster (comma-separated)")
            return names
        return raw

    def policy_parameter(self, cluster_name: str) -> str:
        return f"{self.policy_parameter_prefix.rstrip('/')}/{cluster_name}"


class TriggerConfig(EnvConfig):
    state_machine_arn: NonEmpty = Field(alias="STATE_MACHINE_ARN")
    lock_ttl_seconds: Annotated[int, Field(gt=0)] = Field(alias="LOCK_TTL_SECONDS")
    debounce_seconds: Annotated[int, Field(gt=0)] = Field(alias="DEBOUNCE_SECONDS")
    # A silence longer than this lists the cluster's events (rebalancer.app.trigger.gap: two schedule periods).
    event_gap_seconds: Annotated[int, Field(gt=0)] = Field(alias="EVENT_GAP_SECONDS")


class ObserveConfig(EnvConfig):
    # How long the demand samples (the backtest's history) are kept: their DynamoDB TTL.
    history_retention_days: Annotated[int, Field(gt=0)] = Field(alias="HISTORY_RETENTION_DAYS")


class VerifyConfig(EnvConfig):
    poll_seconds: Annotated[int, Field(ge=0)] = Field(alias="VERIFY_POLL_SECONDS")
    max_attempts: Annotated[int, Field(gt=0)] = Field(alias="VERIFY_MAX_ATTEMPTS")


class NotifyConfig(EnvConfig):
    topic_arn: NonEmpty = Field(alias="TOPIC_ARN")
    slack_webhook_secret_arn: str = Field("", alias="SLACK_WEBHOOK_SECRET_ARN")


class PlanConfig(EnvConfig):
    # Where the policy is read: SSM (PREFIX/CLUSTER, at most 8 KB) or an AppConfig hosted configuration (1 MB), whose
    # application, environment and profile the template creates for the stack's first cluster (ids).
    policy_source: Literal["ssm", "appconfig"] = Field("ssm", alias="POLICY_SOURCE")
    appconfig_application: str = Field("", alias="APPCONFIG_APPLICATION")
    appconfig_environment: str = Field("", alias="APPCONFIG_ENVIRONMENT")
    appconfig_profile: str = Field("", alias="APPCONFIG_PROFILE")

    @model_validator(mode="after")
    def _appconfig_named(self) -> "PlanConfig":
        if self.policy_source == "appconfig":
            for name in ("appconfig_application", "appconfig_environment", "appconfig_profile"):
                if not getattr(self, name).strip():
                    raise ValueError(f"{name.upper()} must be set when POLICY_SOURCE is appconfig")
        return self


class ApprovalConfig(NotifyConfig):
    slack_signing_secret_arn: str = Field("", alias="SLACK_SIGNING_SECRET_ARN")
    approval_signing_secret_arn: NonEmpty = Field(alias="APPROVAL_SIGNING_SECRET_ARN")
    # The issuer of the approval API's JWT authorizer, set by the template only when the authorizer is on: then the
    # token's claims name the approver. Empty: the link is the credential and the approver types a name.
    approval_oidc_issuer: str = Field("", alias="APPROVAL_OIDC_ISSUER")


C = TypeVar("C", bound=EnvConfig)


def parse(model: type[C], environ: Mapping[str, str]) -> C:
    try:
        return model.model_validate(dict(environ))
    except ValidationError as e:
        err = invalid_input(e, "environment")
        raise InvalidInput(str(err).removeprefix("environment: "), source="environment", field=err.field) from None


@cache
def load(model: type[C]) -> C:
    """Parsed once per process (a Lambda cold start); tests call `load.cache_clear()` after changing the env."""
    return parse(model, os.environ)
