"""The approval HTTP API in template.yaml against the function behind it: every route the template gives API Gateway
is one the resolver serves; the optional JWT authorizer guards every route but Slack's, and the function believes
claims exactly when the authorizer is there."""

from __future__ import annotations

from typing import Any

import pytest
from support import template as t

from rebalancer.adapters.dynamodb.store import Store
from rebalancer.adapters.stepfunctions import TaskTokens
from rebalancer.app import config
from rebalancer.app.approvals.decisions import Approvals
from rebalancer.app.approvals.http import ApprovalApi
from rebalancer.app.approvals.signing import LinkSigner
from rebalancer.domain.clock import system_clock
from rebalancer_tools.fakes.http_api import http_api_event

CONDITION = "HasApprovalOidc"
JWT_ROUTE_AUTH = {"AuthorizationType": {"!If": [CONDITION, "JWT", "NONE"]},
                  "AuthorizerId": {"!If": [CONDITION, {"!Ref": "ApprovalsAuthorizer"}, {"!Ref": "AWS::NoValue"}]}}


def _routes() -> dict[str, dict[str, Any]]:
    return {str(r["Properties"]["RouteKey"]): r["Properties"]
            for r in t.resources("AWS::ApiGatewayV2::Route").values()}


def test_every_route_is_the_approval_api_integration() -> None:
    routes = _routes()
    assert set(routes) == {"GET /approvals/{id}", "POST /approvals/{id}/decision", "GET /approvals/{id}/decision",
                           "POST /slack/interactions", "POST /slack/commands"}
    for props in routes.values():
        assert props["ApiId"] == {"!Ref": "ApprovalsApi"}
        assert props["Target"] == {"!Sub": "integrations/${ApprovalsIntegration}"}
    integration = t.resources()["ApprovalsIntegration"]["Properties"]
    assert (integration["IntegrationUri"], integration["PayloadFormatVersion"]) == \
           ({"!GetAtt": "ApprovalFunction.Arn"}, "2.0")
    permission = t.resources()["ApprovalsApiInvokesFunction"]["Properties"]
    assert (permission["FunctionName"], permission["Principal"]) == ({"!Ref": "ApprovalFunction"},
                                                                     "apigateway.amazonaws.com")


@pytest.mark.parametrize(("route", "status"), [("GET /approvals/{id}", 403), ("POST /approvals/{id}/decision", 403),
                                               ("GET /approvals/{id}/decision", 405),
                                               ("POST /slack/interactions", 401), ("POST /slack/commands", 401)])
def test_the_resolver_serves_each_route_of_the_template(route: str, status: int) -> None:
    """An unsigned request on each route gets that route's refusal, not the resolver's not-found page."""
    assert route in _routes()
    method, path = route.split(" ")
    api = ApprovalApi(Approvals(store=Store("unused"), tasks=TaskTokens(None), signer=LinkSigner(b"k"), channels=[],
                                clock=system_clock))
    answer = api.handle(http_api_event(method, f"https://x{path.replace('{id}', 'abc123')}", body=""))
    assert answer["statusCode"] == status


def test_the_jwt_authorizer_guards_every_route_but_slacks_when_configured() -> None:
    for key, props in _routes().items():
        if key.startswith("POST /slack/"):
            assert (props["AuthorizationType"], "AuthorizerId" in props) == ("NONE", False)
        else:
            assert {k: props[k] for k in JWT_ROUTE_AUTH} == JWT_ROUTE_AUTH, key
    authorizer = t.resources()["ApprovalsAuthorizer"]
    assert authorizer["Condition"] == CONDITION
    assert authorizer["Properties"]["AuthorizerType"] == "JWT"
    assert authorizer["Properties"]["JwtConfiguration"] == {"Issuer": {"!Ref": "ApprovalOidcIssuer"},
                                                            "Audience": [{"!Ref": "ApprovalOidcAudience"}]}


def test_the_authorizer_exists_only_with_issuer_and_audience_both_set() -> None:
    tpl = t.template()
    for name in ("ApprovalOidcIssuer", "ApprovalOidcAudience"):
        assert tpl["Parameters"][name]["Default"] == ""
    both = [{"!Not": [{"!Equals": [{"!Ref": "ApprovalOidcIssuer"}, ""]}]},
            {"!Not": [{"!Equals": [{"!Ref": "ApprovalOidcAudience"}, ""]}]}]
    assert tpl["Conditions"][CONDITION] == {"!And": both}
    rule = tpl["Rules"]["ApprovalOidcIssuerAndAudienceTogether"]
    assert rule["RuleCondition"] == {"!Or": both}
    assert rule["Assertions"][0]["Assert"] == {"!And": both}


def test_the_function_believes_claims_exactly_when_the_authorizer_is_there() -> None:
    env = t.resources()["ApprovalFunction"]["Properties"]["Environment"]["Variables"]
    name = str(config.ApprovalConfig.model_fields["approval_oidc_issuer"].alias)
    assert env[name] == {"!If": [CONDITION, {"!Ref": "ApprovalOidcIssuer"}, ""]}


def test_the_slack_app_manifest_points_at_the_slack_routes() -> None:
    """examples/slack-app-manifest.yaml: the interactivity URL and the slash command are routes of the template, and
    the command's usage is the one its refusals quote."""
    import yaml

    from rebalancer.app.approvals.slash_command import USAGE

    manifest = yaml.safe_load((t.ROOT / "examples" / "slack-app-manifest.yaml").read_text())
    [command] = manifest["features"]["slash_commands"]
    urls = [command["url"], manifest["settings"]["interactivity"]["request_url"]]
    assert {"POST " + u.removeprefix("APPROVAL_API_URL") for u in urls} <= set(_routes())
    assert f"usage: {command['command']} {command['usage_hint']}" == USAGE
    assert "commands" in manifest["oauth_config"]["scopes"]["bot"]
