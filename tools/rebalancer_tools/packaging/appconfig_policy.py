"""A policy published to AWS AppConfig: the policy schema as AppConfig's JSON_SCHEMA validators read it (JSON Schema
draft 4), and `push`: the policy checked here first (one line naming the field, nothing sent), then a hosted
configuration version and a deployment with the stack's strategy. AppConfig runs the profile's validator again
before it deploys, and rolls the deployment back on the environment's alarm.

The template's validator holds `validator_content()`; tests/unit/policy/test_appconfig_schema.py fails when the
two drift, and `rebalancer schema policy --appconfig --write-template` writes it again.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path
from typing import Any

from rebalancer.domain.policy import Policy
from rebalancer.errors import InvalidInput
from rebalancer.parsing.loading import parse_document
from rebalancer.parsing.validation import load_model

DRAFT4 = "http://json-schema.org/draft-04/schema#"
HOSTED_MAX_BYTES = 1024 * 1024  # AppConfig's quota for a hosted configuration (the default; 2 MB on request)
# Keywords of later drafts that draft 4 has no equivalent of: the conversion refuses them rather than drop a rule.
_LATER = {"contains", "propertyNames", "if", "then", "else", "dependentRequired", "dependentSchemas",
          "unevaluatedProperties", "unevaluatedItems", "$anchor", "$dynamicRef", "minContains", "maxContains"}
# The template's validator: a literal block holding one line of JSON, marked by its comment.
TEMPLATE_LINE = re.compile(r"^\s*Content: \|-\s*# policy schema, draft 4.*\n\s*(\{.*\})$", re.M)


def draft4(node: Any) -> Any:
    """pydantic's JSON schema (draft 2020-12) written in draft 4's words: $defs → definitions, numeric
    exclusiveMinimum/Maximum → minimum/maximum with the boolean, const → a one-value enum, prefixItems → items."""
    if isinstance(node, list):
        return [draft4(x) for x in node]
    if not isinstance(node, dict):
        return node
    later = _LATER & set(node)
    if later:
        raise ValueError(f"the policy schema uses {sorted(later)}, which JSON Schema draft 4 cannot say")
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "$defs":
            out["definitions"] = {k: draft4(v) for k, v in value.items()}
        elif key == "$ref" and isinstance(value, str):
            out["$ref"] = value.replace("#/$defs/", "#/definitions/")
        elif key in ("exclusiveMinimum", "exclusiveMaximum") and not isinstance(value, bool):
            out[key.replace("exclusiveM", "m")] = value
            out[key] = True
        elif key == "const":
            out["enum"] = [value]
        elif key == "prefixItems":
            out["items"] = draft4(value)
        elif key == "items" and "prefixItems" in node:
            if value is False:
                out["additionalItems"] = False
        elif key in ("properties", "patternProperties", "definitions"):
            out[key] = {k: draft4(v) for k, v in value.items()}
        else:
            out[key] = draft4(value)
    return out


def validator_schema() -> dict[str, Any]:
    return {"$schema": DRAFT4, **draft4(Policy.model_json_schema())}


def validator_content() -> str:
    """The validator's Content: compact, as AppConfig holds at most 32,768 characters there."""
    return json.dumps(validator_schema(), separators=(",", ":"), sort_keys=True)


def write_template(path: Path) -> bool:
    """Write `validator_content()` into the template's validator line; True when it changed."""
    text = path.read_text()
    if not TEMPLATE_LINE.search(text):
        raise InvalidInput("no policy-schema validator line in the template", source=str(path))
    new = TEMPLATE_LINE.sub(lambda m: m.group(0).replace(m.group(1), validator_content()), text, count=1)
    if new == text:
        return False
    path.write_text(new)
    return True


def _plain(value: Any) -> Any:
    if isinstance(value, datetime | date):
        return value.isoformat()
    raise TypeError(f"{type(value).__name__} is not JSON")


def policy_json(text: str, source: str) -> tuple[bytes, Policy]:
    """The policy document (YAML or JSON) as the JSON AppConfig validates and serves, once the model accepts it."""
    doc = parse_document(text, source)
    policy = load_model(Policy, doc, source)
    content = json.dumps(doc, default=_plain, separators=(",", ":")).encode()
    if len(content) > HOSTED_MAX_BYTES:
        raise InvalidInput(f"is {len(content):,} bytes as JSON; an AppConfig hosted configuration holds "
                           f"{HOSTED_MAX_BYTES:,}", source=source)
    return content, policy


@dataclass(frozen=True, slots=True)
class Target:
    application: str
    environment: str
    profile: str

    @classmethod
    def parse(cls, text: str) -> Target:
        parts = [p.strip() for p in text.split("/")]
        if len(parts) != 3 or not all(parts):
            raise InvalidInput("expected APPLICATION_ID/ENVIRONMENT_ID/PROFILE_ID (the stack's PolicyAppConfig "
                               "output)", field="--appconfig", value=text)
        return cls(*parts)


def profile_name(appconfig: Any, target: Target) -> str:
    """The configuration profile's name: the stack names it after the cluster whose policy it holds."""
    from rebalancer.adapters.aws import aws_call

    with aws_call("appconfig:GetConfigurationProfile", f"{target.application}/{target.profile}"):
        return str(appconfig.get_configuration_profile(ApplicationId=target.application,
                                                       ConfigurationProfileId=target.profile)["Name"])


@dataclass(frozen=True, slots=True)
class Pushed:
    version: int
    deployment: int
    state: str
    teams: int
    size: int


def push(appconfig: Any, target: Target, content: bytes, policy: Policy, *, strategy: str,
         description: str = "") -> Pushed:
    """A hosted configuration version of `content`, then its deployment to the environment."""
    from rebalancer.adapters.aws import aws_call

    where = f"{target.application}/{target.profile}"
    with aws_call("appconfig:CreateHostedConfigurationVersion", where):
        version = appconfig.create_hosted_configuration_version(
            ApplicationId=target.application, ConfigurationProfileId=target.profile, Content=content,
            ContentType="application/json", Description=description[:1024])["VersionNumber"]
    with aws_call("appconfig:StartDeployment", f"{target.application}/{target.environment}"):
        deployment = appconfig.start_deployment(
            ApplicationId=target.application, EnvironmentId=target.environment, DeploymentStrategyId=strategy,
            ConfigurationProfileId=target.profile, ConfigurationVersion=str(version), Description=description[:1024])
    return Pushed(int(version), int(deployment["DeploymentNumber"]), str(deployment["State"]), len(policy.teams),
                  len(content))
