"""A policy read that fails says what kind of failure it is. Real boto3 clients (Powertools' providers over them)
against the emulator over loopback HTTP, with AWS's answers replaced at the wire for chosen attempts (a
`before-send` hook answers instead of the server: botocore's retries and back-off run as they would against AWS,
without the back-off's sleeps, tests/conftest.py):

- throttling and 5xx are retried by the SDK; still failing, they are a TransientError (the run is retried and never
  blamed on the policy), for AppConfig Data and SSM alike;
- a configuration that is not there, or empty, is an InvalidInput that says so."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from aws_lambda_powertools.utilities.parameters import AppConfigProvider
from botocore.awsrequest import AWSResponse
from support.emulator import http_emulator

from rebalancer.adapters.aws import AwsClients
from rebalancer.app import config
from rebalancer.app.policy_source import load_appconfig_policy, policy_loader
from rebalancer.errors import InvalidInput, TransientError

POLICY = {"mode": "dry-run", "teams": {"a": {"weight": 2}}}


class Wire:
    """Answers the first `times` requests of `operation` with AWS's error `code` and HTTP `status`; counts every
    attempt botocore makes."""

    def __init__(self, client: Any, operation: str, code: str, status: int, times: int) -> None:
        self.operation, self.code, self.status, self.times, self.attempts = operation, code, status, times, 0
        client.meta.events.register_first("before-send", self._send)

    def _send(self, request: Any, event_name: str, **_: Any) -> AWSResponse | None:
        if event_name.rsplit(".", 1)[-1] != self.operation:
            return None
        self.attempts += 1
        if self.attempts > self.times:
            return None
        body = json.dumps({"__type": self.code, "message": "Rate exceeded" if self.status < 500 else "oops"})
        headers = {"x-amzn-ErrorType": self.code, "Content-Type": "application/x-amz-json-1.1"}
        return AWSResponse(request.url, self.status, headers, _Raw(body.encode()))


class _Raw:
    def __init__(self, data: bytes) -> None:
        self.data = data

    def stream(self, **_: Any) -> Iterator[bytes]:
        yield self.data


@pytest.fixture
def emulator(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    with http_emulator() as emu:
        assert emu.endpoint
        monkeypatch.setenv("AWS_ENDPOINT_URL", emu.endpoint)
        yield


@pytest.fixture
def appconfig(emulator: None) -> Iterator[tuple[Any, str, str, str]]:
    """An application, environment and profile with `POLICY` deployed; the AppConfig client."""
    if True:
        client = boto3.client("appconfig")
        app = client.create_application(Name="rebalancer-policy")["Id"]
        env = client.create_environment(ApplicationId=app, Name="live")["Id"]
        profile = client.create_configuration_profile(ApplicationId=app, Name="c1", LocationUri="hosted",
                                                      Type="AWS.Freeform")["Id"]
        deploy(client, app, env, profile, json.dumps(POLICY).encode())
        yield client, app, env, profile


def deploy(client: Any, app: str, env: str, profile: str, content: bytes) -> None:
    version = client.create_hosted_configuration_version(ApplicationId=app, ConfigurationProfileId=profile,
                                                         Content=content, ContentType="application/json")
    client.start_deployment(ApplicationId=app, EnvironmentId=env, ConfigurationProfileId=profile,
                            ConfigurationVersion=str(version["VersionNumber"]),
                            DeploymentStrategyId="AppConfig.AllAtOnce")


def provider(app: str, env: str) -> tuple[AppConfigProvider, Any]:
    """Powertools' provider over the client the plan step's loader gives it (policy_source.policy_loader)."""
    clients = AwsClients()
    return AppConfigProvider(environment=env, application=app, boto3_client=clients.client("appconfigdata")), \
        clients.client("appconfigdata")


def test_throttling_is_retried_by_the_sdk_and_the_policy_is_read(appconfig: Any) -> None:
    _client, app, env, profile = appconfig
    p, data = provider(app, env)
    wire = Wire(data, "GetLatestConfiguration", "ThrottlingException", 400, times=2)
    assert load_appconfig_policy(app, env, profile, provider=p).teams["a"].weight == 2
    assert wire.attempts == 3


@pytest.mark.parametrize(("code", "status"), [("ThrottlingException", 400), ("InternalServerException", 500),
                                              ("ServiceUnavailableException", 503)])
def test_throttling_and_5xx_past_the_sdks_retries_are_transient(appconfig: Any, code: str, status: int) -> None:
    _client, app, env, profile = appconfig
    p, data = provider(app, env)
    wire = Wire(data, "GetLatestConfiguration", code, status, times=1000)
    with pytest.raises(TransientError) as e:
        load_appconfig_policy(app, env, profile, provider=p)
    assert not isinstance(e.value, InvalidInput)
    assert wire.attempts == AwsClients().max_attempts  # the first try and 9 retries, with back-off
    message = str(e.value)
    assert message.startswith(f"appconfigdata:GetLatestConfiguration on appconfig:{app}/{env}/{profile}: {code}")
    assert "the policy is not blamed" in message
    assert "\n" not in message


def test_a_configuration_that_is_not_there_is_bad_input_naming_what_aws_said(appconfig: Any) -> None:
    _client, app, env, _profile = appconfig
    p, _data = provider(app, env)
    with pytest.raises(InvalidInput) as e:
        load_appconfig_policy(app, env, "nope", provider=p)
    assert str(e.value).startswith(f"appconfig:{app}/{env}/nope: cannot read the policy configuration: "
                                   "appconfigdata:StartConfigurationSession")


def test_an_empty_deployed_configuration_says_it_is_empty(appconfig: Any) -> None:
    client, app, env, _profile = appconfig
    empty = client.create_configuration_profile(ApplicationId=app, Name="c2", LocationUri="hosted",
                                                Type="AWS.Freeform")["Id"]
    deploy(client, app, env, empty, b"")
    p, _data = provider(app, env)
    with pytest.raises(InvalidInput) as e:
        load_appconfig_policy(app, env, empty, provider=p)
    assert str(e.value) == f"appconfig:{app}/{env}/{empty}: no policy deployed (the deployed configuration is empty)"


def test_ssm_throttling_past_the_sdks_retries_is_transient_and_a_missing_parameter_is_not(emulator: None) -> None:
    if True:
        ssm = boto3.client("ssm")
        ssm.put_parameter(Name="/p/c1", Type="String", Value="teams: {a: {weight: 2}}")
        cfg = config.parse(config.PlanConfig, {"TABLE_NAME": "t", "MANAGED_CLUSTERS": "c1, c2",
                                               "POLICY_PARAMETER_PREFIX": "/p", "TOPIC_ARN": "arn:t"})
        clients = AwsClients()
        load = policy_loader(cfg, clients)
        assert load("c1").teams["a"].weight == 2
        with pytest.raises(InvalidInput, match=r"cannot read the policy parameter: .*ParameterNotFound"):
            load("c2")
        throttled = Wire(clients.client("ssm"), "GetParameter", "ThrottlingException", 400, times=1000)
        with pytest.raises(TransientError, match=r"^ssm:GetParameter on ssm:/p/c1: ThrottlingException"):
            policy_loader(cfg, clients)("c1")  # the next invocation's loader (this one keeps the value a minute)
        assert throttled.attempts == clients.max_attempts


def test_a_secret_that_cannot_be_reached_is_transient_and_one_that_is_not_there_is_not(
        monkeypatch: pytest.MonkeyPatch, emulator: None) -> None:
    """The Slack and signing secrets (Powertools' get_secret wraps the AWS error the same way)."""
    from aws_lambda_powertools.utilities import parameters

    from rebalancer.app.notifications.outlets import secret
    from rebalancer.errors import PermanentError

    parameters.clear_caches()  # type: ignore[no-untyped-call]
    with pytest.raises(PermanentError, match=r"^secretsmanager:GetSecretValue on arn:nope: ResourceNotFound"):
        secret("arn:nope")
    parameters.clear_caches()  # type: ignore[no-untyped-call]
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")  # nothing listens there
    with pytest.raises(TransientError, match=r"^secretsmanager on arn:nope: cannot reach the endpoint"):
        secret("arn:nope")
    parameters.clear_caches()  # type: ignore[no-untyped-call]
