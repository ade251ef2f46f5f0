"""Per-page CSRF nonces for the review page's Approve / Reject form.

A nonce is `<random>.<mac>`, the MAC an HMAC-SHA256 over (approval id, expiry, random) under a key derived from the
link-signing key, so a nonce only works for the approval and expiry of the page that issued it and cannot be made up.
Single use: the first POST claims the nonce's random part in the store (ApprovalRecords.claim_nonce, a conditional
write); a replay of the form finds it claimed. (The decision itself is single-use too: the approval record moves
pending → decided once.)
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from rebalancer.errors import BadLink, LinkExpired

NONCE_BYTES = 16


def _random_part() -> str:
    return secrets.token_hex(NONCE_BYTES)


@dataclass(frozen=True, slots=True)
class FormNonces:
    link_key: bytes
    random: Callable[[], str] = field(default=_random_part)  # injected in tests for repeatable pages

    @property
    def _key(self) -> bytes:
        # Its own key, so a nonce's MAC can never stand in for a link signature or the other way round.
        return hmac.new(self.link_key, b"rebalancer form nonce v1", hashlib.sha256).digest()

    def _mac(self, approval_id: str, expires: int, rand: str) -> str:
        return hmac.new(self._key, f"{approval_id}\n{expires}\n{rand}".encode(), hashlib.sha256).hexdigest()

    def issue(self, approval_id: str, expires: int) -> str:
        rand = self.random()
        return f"{rand}.{self._mac(approval_id, expires, rand)}"

    def check(self, approval_id: str, expires: int, nonce: str, now: datetime) -> str:
        """The nonce's id (its random part, what the store claims once). Raises BadLink when the nonce was not issued
        for this approval and expiry, or the expiry has passed."""
        rand, _, mac = nonce.partition(".")
        if not rand or not mac or not hmac.compare_digest(self._mac(approval_id, expires, rand), mac):
            raise BadLink("This form was not issued for this approval; open the link from the message again.")
        if now.timestamp() >= expires:
            raise LinkExpired("This form has expired; the change was not made.")
        return rand

