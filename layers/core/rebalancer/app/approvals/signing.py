"""Approval links: HMAC-SHA256 over (approval id, decision, expiry), so a link cannot be forged, altered or used
after it expires. Single use is enforced by the store (pending → decided once). Slack interactions are verified
with Slack's signing secret, by Slack's documented v0 scheme ("Verifying requests from Slack"): a few lines of hmac,
where slack_sdk's SignatureVerifier would load the whole slack_sdk package (its web client) on every approval
cold start. tests/unit/app/test_signing.py checks the two agree."""

from __future__ import annotations

import hashlib
import hmac
from datetime import datetime
from typing import Literal
from urllib.parse import urlencode

from rebalancer.errors import BadLink, LinkExpired
from rebalancer.parsing.text import whole_number

Decision = Literal["approve", "reject"]
SLACK_MAX_AGE_SECONDS = 5 * 60
# Epoch seconds (a link's expiry, Slack's request timestamp) have 10 digits until 2286; 11 reach the year 5138,
# within what a datetime holds, so a parsed value always becomes a time.
EPOCH_DIGITS_MAX = 11
DECISIONS: tuple[Decision, ...] = ("approve", "reject")


class LinkSigner:
    __slots__ = ("key",)

    def __init__(self, key: bytes) -> None:
        self.key = key

    def signature(self, approval_id: str, decision: str, expires: int) -> str:
        msg = f"{approval_id}\n{decision}\n{expires}".encode()
        return hmac.new(self.key, msg, hashlib.sha256).hexdigest()

    def link(self, base_url: str, approval_id: str, decision: Decision, expires_at: datetime) -> str:
        expires = int(expires_at.timestamp())
        query = urlencode({"decision": decision, "expires": expires,
                           "sig": self.signature(approval_id, decision, expires)})
        return f"{base_url.rstrip('/')}/approvals/{approval_id}?{query}"

    def check(self, approval_id: str, params: dict[str, str], now: datetime) -> Decision:
        decision, expires_raw, sig = params.get("decision"), params.get("expires"), params.get("sig")
        if not decision or not expires_raw or not sig:
            raise BadLink("This link is incomplete.")
        if decision not in DECISIONS:
            raise BadLink("This link names no valid decision.")
        expires = whole_number(expires_raw, EPOCH_DIGITS_MAX)
        if expires is None:
            raise BadLink("This link is malformed.")
        if not hmac.compare_digest(self.signature(approval_id, decision, expires), sig):
            raise BadLink("This link is not valid (its signature does not match).")
        if now.timestamp() >= expires:
            raise LinkExpired("This link has expired; the change was not made.")
        return decision


def slack_request_is_valid(signing_secret: str, body: str, headers: dict[str, str], now: datetime) -> bool:
    """Slack's v0 signature over the raw body (`v0=` + hex HMAC-SHA256 of `v0:<timestamp>:<body>`), rejecting
    requests more than five minutes from now either way (replays)."""
    lower = {k.lower(): v for k, v in headers.items()}
    timestamp, signature = lower.get("x-slack-request-timestamp"), lower.get("x-slack-signature")
    sent = whole_number(timestamp, EPOCH_DIGITS_MAX)
    if sent is None or not signature or not signing_secret.strip():
        return False
    if abs(now.timestamp() - sent) > SLACK_MAX_AGE_SECONDS:
        return False
    expected = hmac.new(signing_secret.encode(), f"v0:{timestamp}:{body}".encode(), hashlib.sha256).hexdigest()
    return hmac.compare_digest(f"v0={expected}", signature)
