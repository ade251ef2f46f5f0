"""What moto lacks of AWS AppConfig, added to moto's AppConfig backend the way install.py extends SageMaker:
ListHostedConfigurationVersions, environments (with their monitors), deployment strategies (AWS's predefined ones
and created ones), deployments (StartDeployment, GetDeployment, ListDeployments) that run each JSON_SCHEMA validator
of the profile (draft 4, as AppConfig does) before anything is deployed, and the AppConfig Data API
(StartConfigurationSession, GetLatestConfiguration) serving the latest deployed hosted configuration version — so
real boto3 clients and Powertools' AppConfigProvider work against the emulator in process and over HTTP.

A deployment completes at once (no growth steps or bake time are simulated); `roll_back` undoes the latest one as
a CloudWatch alarm on the environment would.
"""

from __future__ import annotations

import base64
import datetime as dt
import itertools
import json
from dataclasses import dataclass, field
from typing import Any

import jsonschema  # type: ignore[import-untyped]  # no stubs; the emulator uses two calls
from moto.appconfig import urls as appconfig_urls
from moto.appconfig.models import AppConfigBackend, Application, appconfig_backends
from moto.appconfig.responses import AppConfigResponse
from moto.core.exceptions import JsonRESTError
from moto.core.responses import BaseResponse

POLL_SECONDS = 60  # AppConfig's default RequiredMinimumPollIntervalInSeconds
# AWS's predefined strategies that a test or the template may name (AppConfig user guide, "Predefined deployment
# strategies").
PREDEFINED = {
    "AppConfig.AllAtOnce": (0, 100.0, 10), "AppConfig.Linear50PercentEvery30Seconds": (1, 50.0, 1),
    "AppConfig.Canary10Percent20Minutes": (20, 10.0, 10),
}
_DATA_HOST = r"https?://appconfigdata\.(.+)\.amazonaws\.com"
_PATHS = {
    "{0}/applications/(?P<app_id>[^/]+)/environments$": "appconfig",
    "{0}/applications/(?P<app_id>[^/]+)/environments/(?P<env_id>[^/]+)$": "appconfig",
    "{0}/applications/(?P<app_id>[^/]+)/environments/(?P<env_id>[^/]+)/deployments$": "appconfig",
    "{0}/applications/(?P<app_id>[^/]+)/environments/(?P<env_id>[^/]+)/deployments/(?P<n>[^/]+)$": "appconfig",
    "{0}/deploymentstrategies$": "appconfig",
    "{0}/deploymentstrategies/(?P<strategy_id>[^/]+)$": "appconfig",
    "{0}/configurationsessions$": "data",
    "{0}/configuration$": "data",
}


class BadRequest(JsonRESTError):
    code = 400

    def __init__(self, message: str, details: dict[str, Any] | None = None) -> None:
        super().__init__("BadRequestException", message)
        if details:
            self.description = json.dumps({"__type": "BadRequestException", "message": message,
                                           "Message": message, "Details": details})


class NotFound(JsonRESTError):
    code = 404

    def __init__(self, message: str) -> None:
        super().__init__("ResourceNotFoundException", message)


@dataclass(frozen=True, slots=True)
class Environment:
    app_id: str
    id: str
    name: str
    description: str
    monitors: list[dict[str, str]]
    deployments: list[dict[str, Any]] = field(default_factory=list)
    deployed: dict[str, int] = field(default_factory=dict)  # profile id → deployed hosted version

    def to_json(self) -> dict[str, Any]:
        state = "RolledBack" if self.deployments and self.deployments[-1]["State"] == "ROLLED_BACK" else \
            "ReadyForDeployment"
        return {"ApplicationId": self.app_id, "Id": self.id, "Name": self.name, "Description": self.description,
                "State": state, "Monitors": self.monitors}


@dataclass(frozen=True, slots=True)
class Session:
    app_id: str
    env_id: str
    profile_id: str
    seen: int | None = None  # the version this session last returned


@dataclass(frozen=True, slots=True)
class State:
    environments: dict[tuple[str, str], Environment] = field(default_factory=dict)
    strategies: dict[str, dict[str, Any]] = field(default_factory=dict)
    sessions: dict[str, Session] = field(default_factory=dict)
    ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    def new_id(self) -> str:
        return f"{next(self.ids):07x}"


def state(backend: AppConfigBackend) -> State:
    found = getattr(backend, "rebalancer_state", None)
    if found is None:
        found = State()
        backend.rebalancer_state = found  # type: ignore[attr-defined]
    return found


# --- lookups (ids or names, as AWS accepts either for the Data API) ------------------------------------------------
def application(backend: AppConfigBackend, ref: str) -> Application:
    for app in backend.applications.values():
        if ref in (app.id, app.name):
            return app
    raise NotFound(f"Application {ref} not found")


def environment(backend: AppConfigBackend, app: Application, ref: str) -> Environment:
    for (app_id, _), env in state(backend).environments.items():
        if app_id == app.id and ref in (env.id, env.name):
            return env
    raise NotFound(f"Environment {ref} not found in application {app.id}")


def profile(app: Application, ref: str) -> Any:
    for p in app.config_profiles.values():
        if ref in (p.id, p.name):
            return p
    raise NotFound(f"Configuration profile {ref} not found in application {app.id}")


def configuration_arn(backend: AppConfigBackend, params: dict[str, Any]) -> str | None:
    """The ARN IAM authorizes a Data API call on: application/…/environment/…/configuration/… in ids, from the
    identifiers StartConfigurationSession names or the session a token belongs to."""
    try:
        if "ConfigurationToken" in params or "configuration_token" in params:
            token = str(params.get("ConfigurationToken") or params.get("configuration_token"))
            s = state(backend).sessions.get(token)
            if s is None:
                return None
            ids = (s.app_id, s.env_id, s.profile_id)
        else:
            app = application(backend, str(params["ApplicationIdentifier"]))
            env = environment(backend, app, str(params["EnvironmentIdentifier"]))
            ids = (app.id, env.id, profile(app, str(params["ConfigurationProfileIdentifier"])).id)
    except (NotFound, KeyError):
        return None
    prefix = f"arn:aws:appconfig:{backend.region_name}:{backend.account_id}"
    return f"{prefix}:application/{ids[0]}/environment/{ids[1]}/configuration/{ids[2]}"


# --- validation and deployment -------------------------------------------------------------------------------------
def validate(config_profile: Any, content: bytes) -> None:
    """Each JSON_SCHEMA validator of the profile on the content (JSON Schema draft 4, as AppConfig's are); the first
    violation is a BadRequestException naming where it is, as AppConfig's InvalidConfiguration details do."""
    for validator in config_profile.validators or []:
        if validator.get("Type") != "JSON_SCHEMA":
            continue
        try:
            doc = json.loads(content)
        except ValueError as e:
            raise BadRequest(f"Configuration is not valid JSON: {e}") from None
        errors = sorted(jsonschema.Draft4Validator(json.loads(validator["Content"])).iter_errors(doc),
                        key=lambda e: list(map(str, e.absolute_path)))
        if errors:
            first = _deepest(errors[0])
            where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in first.absolute_path) or "."
            details = {"InvalidConfiguration": [{"Constraint": str(first.validator), "Location": f"${where}",
                                                 "Reason": first.message, "Type": "Schema"}]}
            raise BadRequest(f"Configuration failed validation: ${where}: {first.message}", details)


def _deepest(error: jsonschema.ValidationError) -> jsonschema.ValidationError:
    """An anyOf (an optional field is `X or null`) reports itself; its branches say what is wrong."""
    while error.context:
        error = sorted(error.context, key=lambda e: -len(e.absolute_path))[0]
    return error


def start_deployment(backend: AppConfigBackend, app_id: str, env_id: str, p: dict[str, Any]) -> dict[str, Any]:
    app = application(backend, app_id)
    env = environment(backend, app, env_id)
    config_profile = profile(app, str(p["ConfigurationProfileId"]))
    strategy = strategy_of(backend, str(p["DeploymentStrategyId"]))
    version = int(p["ConfigurationVersion"])
    hosted = config_profile.config_versions.get(version)
    if hosted is None:
        raise BadRequest(f"Configuration version {version} not found for profile {config_profile.id}")
    content = hosted.content if isinstance(hosted.content, bytes) else str(hosted.content).encode()
    validate(config_profile, content)
    now = dt.datetime.now(dt.UTC).isoformat()
    deployment = {
        "ApplicationId": app.id, "EnvironmentId": env.id, "DeploymentStrategyId": strategy["Id"],
        "ConfigurationProfileId": config_profile.id, "DeploymentNumber": len(env.deployments) + 1,
        "ConfigurationName": config_profile.name, "ConfigurationLocationUri": "hosted",
        "ConfigurationVersion": str(version), "Description": p.get("Description", ""),
        "DeploymentDurationInMinutes": strategy["DeploymentDurationInMinutes"],
        "GrowthType": strategy["GrowthType"], "GrowthFactor": strategy["GrowthFactor"],
        "FinalBakeTimeInMinutes": strategy["FinalBakeTimeInMinutes"], "State": "COMPLETE",
        "PercentageComplete": 100.0, "StartedAt": now, "CompletedAt": now, "EventLog": [],
        "VersionLabel": hosted.version_label or "", "previous": env.deployed.get(config_profile.id),
    }
    env.deployments.append(deployment)
    env.deployed[config_profile.id] = version
    return deployment


def roll_back(account: str, region: str, app_ref: str, env_ref: str) -> None:
    """What an alarm of the environment's monitors does: the latest deployment is rolled back and the version
    deployed before it is served again."""
    backend = appconfig_backends[account][region]
    app = application(backend, app_ref)
    env = environment(backend, app, env_ref)
    last = env.deployments[-1]
    last["State"] = "ROLLED_BACK"
    if last["previous"] is None:
        env.deployed.pop(last["ConfigurationProfileId"], None)
    else:
        env.deployed[last["ConfigurationProfileId"]] = last["previous"]


def strategy_of(backend: AppConfigBackend, ref: str) -> dict[str, Any]:
    if ref in PREDEFINED:
        minutes, growth, bake = PREDEFINED[ref]
        return {"Id": ref, "Name": ref, "DeploymentDurationInMinutes": minutes, "GrowthType": "LINEAR",
                "GrowthFactor": growth, "FinalBakeTimeInMinutes": bake, "ReplicateTo": "NONE"}
    for s in state(backend).strategies.values():
        if ref in (s["Id"], s["Name"]):
            return s
    raise NotFound(f"Deployment strategy {ref} not found")


def _public(deployment: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in deployment.items() if k != "previous"}


# --- moto response methods (AppConfigResponse routes by botocore's model) -----------------------------------------
def _backend(resp: Any) -> AppConfigBackend:
    backend: AppConfigBackend = appconfig_backends[resp.current_account][resp.region]
    return backend


def _path_ids(resp: Any) -> list[str]:
    return [x for x in str(resp.path).split("?")[0].split("/") if x]


def create_environment(self: Any) -> Any:
    backend = _backend(self)
    app = application(backend, _path_ids(self)[1])
    body = json.loads(self.body or "{}")
    env = Environment(app.id, state(backend).new_id(), str(body["Name"]), body.get("Description", ""),
                      list(body.get("Monitors") or []))
    state(backend).environments[(app.id, env.id)] = env
    return 201, {"status": 201}, json.dumps(env.to_json())


def get_environment(self: Any) -> str:
    backend = _backend(self)
    parts = _path_ids(self)
    return json.dumps(environment(backend, application(backend, parts[1]), parts[3]).to_json())


def list_environments(self: Any) -> str:
    backend = _backend(self)
    app = application(backend, _path_ids(self)[1])
    items = [e.to_json() for (a, _), e in state(backend).environments.items() if a == app.id]
    return json.dumps({"Items": items})


def create_deployment_strategy(self: Any) -> Any:
    backend = _backend(self)
    body = json.loads(self.body or "{}")
    s = {"Id": state(backend).new_id(), "Name": body["Name"], "Description": body.get("Description", ""),
         "DeploymentDurationInMinutes": int(body["DeploymentDurationInMinutes"]),
         "GrowthType": body.get("GrowthType", "LINEAR"), "GrowthFactor": float(body["GrowthFactor"]),
         "FinalBakeTimeInMinutes": int(body.get("FinalBakeTimeInMinutes", 0)),
         "ReplicateTo": body.get("ReplicateTo", "NONE")}
    state(backend).strategies[s["Id"]] = s
    return 201, {"status": 201}, json.dumps(s)


def get_deployment_strategy(self: Any) -> str:
    return json.dumps(strategy_of(_backend(self), _path_ids(self)[1]))


def start_deployment_method(self: Any) -> Any:
    parts = _path_ids(self)
    deployment = start_deployment(_backend(self), parts[1], parts[3], json.loads(self.body or "{}"))
    return 201, {"status": 201}, json.dumps(_public(deployment))


def get_deployment(self: Any) -> str:
    backend = _backend(self)
    parts = _path_ids(self)
    env = environment(backend, application(backend, parts[1]), parts[3])
    n = int(parts[5])
    if not 1 <= n <= len(env.deployments):
        raise NotFound(f"Deployment {n} not found")
    return json.dumps(_public(env.deployments[n - 1]))


def list_deployments(self: Any) -> str:
    backend = _backend(self)
    parts = _path_ids(self)
    env = environment(backend, application(backend, parts[1]), parts[3])
    return json.dumps({"Items": [_public(d) for d in reversed(env.deployments)]})


def list_hosted_configuration_versions(self: Any) -> str:
    parts = _path_ids(self)
    config_profile = _backend(self).get_configuration_profile(parts[1], parts[3])
    items = [{"ApplicationId": v.app_id, "ConfigurationProfileId": v.config_id, "VersionNumber": v.version,
              "Description": v.description, "ContentType": v.content_type, "VersionLabel": v.version_label}
             for _, v in sorted(config_profile.config_versions.items(), reverse=True)]
    return json.dumps({"Items": items})


class AppConfigDataResponse(BaseResponse):
    """The AppConfig Data API, served on the AppConfig backend (its requests are signed for `appconfig`)."""

    def __init__(self) -> None:
        super().__init__(service_name="appconfigdata")

    def start_configuration_session(self) -> Any:
        backend = _backend(self)
        body = json.loads(self.body or "{}")
        app = application(backend, str(body.get("ApplicationIdentifier", "")))
        env = environment(backend, app, str(body.get("EnvironmentIdentifier", "")))
        config_profile = profile(app, str(body.get("ConfigurationProfileIdentifier", "")))
        token = _token()
        state(backend).sessions[token] = Session(app.id, env.id, config_profile.id)
        return json.dumps({"InitialConfigurationToken": token}), {"status": 201}

    def get_latest_configuration(self) -> Any:
        backend = _backend(self)
        token = (self.querystring.get("configuration_token") or [""])[0]
        session = state(backend).sessions.pop(token, None)
        if session is None:
            raise BadRequest("Request parameter ConfigurationToken is not valid (unknown, expired or used)")
        env = state(backend).environments[(session.app_id, session.env_id)]
        version = env.deployed.get(session.profile_id)
        if version is None:
            raise NotFound(f"No deployed configuration for profile {session.profile_id} in environment {env.id}")
        hosted = backend.get_hosted_configuration_version(session.app_id, session.profile_id, version)
        next_token = _token()
        state(backend).sessions[next_token] = Session(session.app_id, session.env_id, session.profile_id, version)
        headers = {"status": 200, "Next-Poll-Configuration-Token": next_token,
                   "Next-Poll-Interval-In-Seconds": str(POLL_SECONDS), "Content-Type": hosted.content_type}
        if hosted.version_label:
            headers["Version-Label"] = hosted.version_label
        content = b"" if version == session.seen else hosted.content
        return content, headers


def _token() -> str:
    import secrets

    return base64.urlsafe_b64encode(secrets.token_bytes(24)).decode()


_APPCONFIG_METHODS = {
    "create_environment": create_environment, "get_environment": get_environment,
    "list_environments": list_environments, "create_deployment_strategy": create_deployment_strategy,
    "get_deployment_strategy": get_deployment_strategy, "start_deployment": start_deployment_method,
    "get_deployment": get_deployment, "list_deployments": list_deployments,
    "list_hosted_configuration_versions": list_hosted_configuration_versions,
}


def install() -> None:
    """Called by rebalancer_tools.emulator.install.install (once, before moto builds its URL maps)."""
    import re

    from moto import backend_index

    if _DATA_HOST not in appconfig_urls.url_bases:
        appconfig_urls.url_bases.append(_DATA_HOST)
        backend_index.backend_url_patterns.insert(0, ("appconfig", re.compile(_DATA_HOST)))
    for pattern, api in _PATHS.items():
        handler = AppConfigDataResponse.dispatch if api == "data" else AppConfigResponse.dispatch
        appconfig_urls.url_paths.setdefault(pattern, handler)
    for name, fn in _APPCONFIG_METHODS.items():
        setattr(AppConfigResponse, name, fn)
