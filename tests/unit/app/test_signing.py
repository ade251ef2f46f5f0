from __future__ import annotations

import hashlib
import hmac
from datetime import UTC, datetime, timedelta
from urllib.parse import parse_qsl, urlparse

import pytest
from hypothesis import given
from hypothesis import strategies as st
from slack_sdk.signature import Clock, SignatureVerifier
from support.props import properties

from rebalancer.app.approvals.signing import LinkSigner, slack_request_is_valid
from rebalancer.errors import BadLink

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


class _At(Clock):
    def __init__(self, now: datetime):
        self._now = now

    def now(self) -> float:
        return self._now.timestamp()


@properties()
@given(secret=st.text(min_size=1, max_size=20), body=st.text(max_size=60),
       age=st.integers(min_value=-400, max_value=400), tamper=st.sampled_from(["none", "body", "secret", "sig"]))
def test_the_slack_check_agrees_with_slack_sdks_signature_verifier(secret: str, body: str, age: int,
                                                                   tamper: str) -> None:
    """The v0 scheme written out here accepts exactly what slack_sdk's own SignatureVerifier accepts."""
    ts = int(NOW.timestamp()) - age
    headers = _slack_headers("other" + secret if tamper == "secret" else secret, body, ts)
    if tamper == "sig":
        headers["X-Slack-Signature"] = headers["X-Slack-Signature"][:-1] + "0"
    sent = body + "x" if tamper == "body" else body
    ours = slack_request_is_valid(secret, sent, headers, NOW)
    if not secret.strip():  # slack_sdk refuses to be built with a blank secret; ours refuses every request
        assert not ours
        return
    theirs = SignatureVerifier(secret, clock=_At(NOW)).is_valid_request(sent, headers)
    assert ours == theirs


@properties()
@given(timestamp=st.one_of(st.integers(12, 20_000).map(lambda n: "9" * n),
                           st.text(alphabet="0123456789٠١٢٣٤٥٦٧٨٩_+- ", min_size=1, max_size=30)))
def test_a_slack_timestamp_is_parsed_within_its_bound_or_refused(timestamp: str) -> None:
    """Ten ASCII digits today, eleven at most: anything else (thousands of digits, other scripts' digits, signs,
    underscores, spaces) is a request we refuse, never an exception."""
    body = "payload=%7B%7D"
    sig = "v0=" + hmac.new(b"s3cret", f"v0:{timestamp}:{body}".encode(), hashlib.sha256).hexdigest()
    headers = {"X-Slack-Request-Timestamp": timestamp, "X-Slack-Signature": sig}
    ok = slack_request_is_valid("s3cret", body, headers, NOW)
    assert ok == (timestamp.isascii() and timestamp.isdigit() and len(timestamp) <= 11
                  and abs(int(timestamp) - NOW.timestamp()) <= 300)


@properties()
@given(expires=st.one_of(st.integers(12, 20_000).map(lambda n: "9" * n), st.from_regex(r"[0-9٠-٩_+ -]{1,14}",
                                                                                       fullmatch=True)))
def test_a_links_expiry_is_parsed_within_its_bound_or_the_link_is_malformed(expires: str) -> None:
    approval_id, params = _params(SIGNER.link("https://x", "abc123", "approve", NOW + timedelta(hours=1)))
    if expires.isascii() and expires.isdigit() and len(expires) <= 11:
        return  # a number: the signature decides (test_an_altered_link_is_refused)
    with pytest.raises(BadLink, match="malformed"):
        SIGNER.check(approval_id, {**params, "expires": expires}, NOW)
