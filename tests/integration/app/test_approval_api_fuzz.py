"""Anything a client can send through API Gateway to the approval API (method, path, query, headers, body, the
base64 flag, with or without verified claims) gets a 2xx-4xx answer with a body, never an exception or a 5xx,
and decides nothing: no forged request can hold a valid link signature, nonce or Slack signature."""

from __future__ import annotations

import string
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlencode

import pytest
from hypothesis import given
from hypothesis import strategies as st
from support.approval_api import BASE, Api, approval_api
from support.props import properties

from rebalancer_tools.fakes.http_api import http_api_event

ISSUER = "https://login.example.com"
METHODS = st.sampled_from(["POST", "POST", "POST", "GET", "GET", "HEAD", "PUT", "DELETE", "OPTIONS", "get", "TRACE",
                           ""])
SEGMENT = st.text(alphabet=string.ascii_letters + string.digits + "-_.%~!$&'()*+,;=:@<>\"{}", max_size=70)
APPROVAL_ID = st.one_of(st.just("{real}"), st.text(alphabet=string.ascii_letters + string.digits + "-_", min_size=1,
                                                   max_size=64), SEGMENT)
PATHS = st.one_of(
    APPROVAL_ID.map(lambda s: f"/approvals/{s}/decision"), APPROVAL_ID.map(lambda s: f"/approvals/{s}"),
    st.just("/slack/interactions"), st.lists(SEGMENT, max_size=4).map(lambda parts: "/" + "/".join(parts)))
TEXT = st.text(max_size=200)
FIELDS = st.dictionaries(st.sampled_from(["decision", "link", "expires", "sig", "nonce", "name", "comment",
                                          "payload", "x"]), TEXT, max_size=8)
NUMBERS = st.integers(1, 6000).map(lambda n: "9" * n)  # a numeric header far beyond any bound
HEADERS = st.dictionaries(st.sampled_from(["content-type", "x-slack-signature", "x-slack-request-timestamp",
                                           "authorization", "cookie", "x-forwarded-for"]),
                          st.one_of(TEXT, NUMBERS), max_size=4)
CLAIMS = st.one_of(st.none(), st.dictionaries(st.sampled_from(["iss", "sub", "email", "preferred_username"]),
                                              TEXT, max_size=4))


# Module-scoped on purpose: every example checks that nothing changed, so they can share one waiting approval.
@pytest.fixture(scope="module", params=[None, ISSUER], ids=["link-is-the-credential", "jwt-authorizer"])
def api(request: pytest.FixtureRequest) -> Iterator[Api]:
    with pytest.MonkeyPatch.context() as env:  # the conftest's fake account is per test; this fixture is older
        for name, value in (("AWS_ACCESS_KEY_ID", "testing"), ("AWS_SECRET_ACCESS_KEY", "testing"),
                            ("AWS_DEFAULT_REGION", "us-east-1")):
            env.setenv(name, value)
        with approval_api(oidc_issuer=request.param, slack_signing_secret="slack-secret") as a:
            yield a


@properties(150)
@given(method=METHODS, path=PATHS, query=FIELDS, headers=HEADERS, form=FIELDS, raw=st.binary(max_size=64),
       use_raw=st.booleans(), base64_body=st.booleans(), base64_flag_only=st.booleans(), claims=CLAIMS)
def test_any_request_gets_a_4xx_or_2xx_and_decides_nothing(
        api: Api, method: str, path: str, query: dict[str, str], headers: dict[str, str], form: dict[str, str],
        raw: bytes, use_raw: bool, base64_body: bool, base64_flag_only: bool,
        claims: dict[str, str] | None) -> None:
    body: str | bytes = raw if use_raw else urlencode(form)
    path = path.replace("{real}", api.approval_id)
    event: dict[str, Any] = http_api_event(method, f"{BASE}{path}?{urlencode(query)}", headers=headers, body=body,
                                           base64_body=base64_body, claims=claims)
    if base64_flag_only:  # a body API Gateway would never send: flagged base64 but not base64
        event["isBase64Encoded"] = True
    answer = api.http.handle(event)
    assert 200 <= answer["statusCode"] < 500, answer
    assert isinstance(answer["body"], str)
    assert (api.status(), api.sfn.calls, api.approval_audit()) == ("pending", [], [])

