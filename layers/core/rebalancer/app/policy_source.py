"""The cluster's policy from SSM Parameter Store or from an AWS AppConfig hosted configuration (Powertools
Parameters, cached), validated with the foundation's model.

What kind of failure it is decides what happens next, so a read says it (rebalancer.errors):
- AWS throttled the read or failed on its side (throttling, 5xx, no connection), still so after botocore's retries
  with back-off (the providers read through the process's clients, rebalancer.adapters.aws.AwsClients: standard
  retry mode, 10 attempts, exponential back-off with jitter): TransientError. The state machine's
  Plan state retries it with its own back-off; a run that still fails is a failed run (the ops-failed-runs alarm),
  not a bad policy: no invalid-policy audit record, and the plan-errors alarm that rolls an AppConfig deployment
  back does not count it (template.yaml, PolicyPlanErrorsAlarm).
- Anything else is an InvalidInput naming where the policy was read: a parameter or configuration that is not
  there, empty (said so), not readable as text, or not a valid policy (naming the field).

SSM parameters hold at most 8 KB (about 150 teams); an AppConfig hosted configuration holds 1 MB, is checked by the
profile's JSON-schema validator before it is deployed and rolls back on the environment's alarm."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from aws_lambda_powertools.utilities import parameters
from aws_lambda_powertools.utilities.parameters import AppConfigProvider, SSMProvider
from aws_lambda_powertools.utilities.parameters.exceptions import GetParameterError

from rebalancer.adapters.aws import AwsClients, cause_of, one_line
from rebalancer.app import wiring
from rebalancer.app.config import PlanConfig
from rebalancer.domain.policy import Policy
from rebalancer.errors import InvalidInput, RebalancerError, TransientError
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
        raise read_failed(e, "ssm", source, "the policy parameter") from None
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
        if isinstance(e.__context__, KeyError):
            # Powertools' provider has no earlier value to give for an empty first answer: nothing is deployed
            # that has content (AppConfig serves an empty body then).
            raise InvalidInput("no policy deployed (the deployed configuration is empty)", source=source) from None
        raise read_failed(e, "appconfigdata", source, "the policy configuration") from None
    if not isinstance(data, bytes | str) or not data.strip():
        raise InvalidInput("no policy deployed (the deployed configuration is empty)", source=source)
    return load_text(Policy, data, source, max_bytes=POLICY_MAX_BYTES)  # bytes: decoded as UTF-8, a bad byte named


def read_failed(e: GetParameterError, service: str, source: str, what: str) -> RebalancerError:
    """TransientError for throttling, 5xx and a lost connection (adapters.aws.cause_of), an InvalidInput saying
    what AWS said otherwise."""
    kind = cause_of(e, service, source)
    if isinstance(kind, TransientError):
        return TransientError(f"{kind} (still failing after the SDK's retries: the run is retried, the policy is not "
                              "blamed)")
    return InvalidInput(f"cannot read {what}: {kind or one_line(e)}", source=source)


def policy_loader(cfg: PlanConfig, clients: AwsClients | None = None) -> Callable[[str], Policy]:
    """cluster name → its policy, from the source the stack was deployed with, read through `clients` (the
    process's, rebalancer.app.wiring.aws_clients, by default): their retry policy is the one every AWS call has."""
    clients = clients or wiring.aws_clients()
    if cfg.policy_source == "ssm":
        ssm = SSMProvider(boto3_client=clients.client("ssm"))
        return lambda cluster: load_policy(cfg.policy_parameter(cluster), provider=ssm)
    served = cfg.managed_clusters[0]
    appconfig = AppConfigProvider(environment=cfg.appconfig_environment, application=cfg.appconfig_application,
                                  boto3_client=clients.client("appconfigdata"))

    def from_appconfig(cluster: str) -> Policy:
        if cluster != served:
            raise InvalidInput(f"PolicySource=appconfig serves the policy of the stack's first cluster ({served}) "
                               f"only; deploy one stack per cluster, or use PolicySource=ssm",
                               source="environment", field="MANAGED_CLUSTERS", value=cluster)
        return load_appconfig_policy(cfg.appconfig_application, cfg.appconfig_environment, cfg.appconfig_profile,
                                     provider=appconfig)

    return from_appconfig
