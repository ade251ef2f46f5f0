from __future__ import annotations

import hashlib
import hmac
from datetime import UTC, datetime, timedelta
from urllib.parse import parse_qsl, urlparse

import pytest

from rebalancer.app.signing import BadLink, LinkSigner, slack_request_is_valid

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
SIGNER = LinkSigner(b"k" * 32)


def _params(url: str) -> tuple[str, dict[str, str]]:
    u = urlparse(url)
    return u.path.rsplit("/", 1)[-1], dict(parse_qsl(u.query))


def test_a_link_round_trips_to_its_decision() -> None:
    url = SIGNER.link("https://api.example/", "abc123", "reject", NOW + timedelta(hours=1))
    assert url.startswith("https://api.example/approvals/abc123?")
    approval_id, params = _params(url)
    assert SIGNER.check(approval_id, params, NOW) == "reject"


@pytest.mark.parametrize(("change", "message"), [
    ({"decision": "approve"}, "signature does not match"),
    ({"expires": "9999999999"}, "signature does not match"),
    ({"sig": "0" * 64}, "signature does not match"),
    ({"decision": "delete"}, "no valid decision"),
    ({"expires": "soon"}, "malformed"),
    ({"sig": ""}, "incomplete"),
])
def test_an_altered_link_is_refused(change: dict[str, str], message: str) -> None:
    approval_id, params = _params(SIGNER.link("https://x", "abc123", "reject", NOW + timedelta(hours=1)))
    with pytest.raises(BadLink, match=message):
        SIGNER.check(approval_id, {**params, **change}, NOW)


def test_a_link_for_another_approval_or_key_is_refused() -> None:
    approval_id, params = _params(SIGNER.link("https://x", "abc123", "approve", NOW + timedelta(hours=1)))
    with pytest.raises(BadLink):
        SIGNER.check("other", params, NOW)
    with pytest.raises(BadLink):
        LinkSigner(b"another key").check(approval_id, params, NOW)


def test_an_expired_link_is_refused() -> None:
    approval_id, params = _params(SIGNER.link("https://x", "abc123", "approve", NOW + timedelta(minutes=5)))
    assert SIGNER.check(approval_id, params, NOW + timedelta(minutes=4)) == "approve"
    with pytest.raises(BadLink, match="expired"):
        SIGNER.check(approval_id, params, NOW + timedelta(minutes=5))


def _slack_headers(secret: str, body: str, ts: int) -> dict[str, str]:
    sig = "v0=" + hmac.new(secret.encode(), f"v0:{ts}:{body}".encode(), hashlib.sha256).hexdigest()
    return {"X-Slack-Request-Timestamp": str(ts), "X-Slack-Signature": sig}


def test_slack_requests_are_verified_with_the_signing_secret() -> None:
    body = "payload=%7B%7D"
    ts = int(NOW.timestamp())
    assert slack_request_is_valid("s3cret", body, _slack_headers("s3cret", body, ts), NOW)
    assert not slack_request_is_valid("s3cret", body + "x", _slack_headers("s3cret", body, ts), NOW)
    assert not slack_request_is_valid("s3cret", body, _slack_headers("other", body, ts), NOW)
    assert not slack_request_is_valid("s3cret", body, {}, NOW)
    assert not slack_request_is_valid("s3cret", body, {"x-slack-request-timestamp": "x", "x-slack-signature": "v0=1"},
                                      NOW)


def test_an_old_slack_request_is_a_replay() -> None:
    body = "payload=%7B%7D"
    old = int((NOW - timedelta(minutes=6)).timestamp())
    assert not slack_request_is_valid("s3cret", body, _slack_headers("s3cret", body, old), NOW)
