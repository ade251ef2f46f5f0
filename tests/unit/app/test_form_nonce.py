"""The review form's nonce: bound by HMAC to one approval and its expiry, unusable after it, and never valid as a
link signature (or the other way round)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from itertools import count

import pytest

from rebalancer.app.approvals.form_nonce import FormNonces
from rebalancer.app.approvals.signing import LinkSigner
from rebalancer.errors import BadLink, LinkExpired

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
EXPIRES = int((NOW + timedelta(hours=1)).timestamp())
KEY = b"k" * 32
ids = count()
NONCES = FormNonces(KEY, random=lambda: f"{next(ids):032x}")


def test_a_nonce_checks_for_its_approval_and_expiry() -> None:
    nonce = NONCES.issue("abc123", EXPIRES)
    NONCES.check("abc123", EXPIRES, nonce, NOW)


def test_each_page_gets_its_own_nonce() -> None:
    assert NONCES.issue("abc123", EXPIRES) != NONCES.issue("abc123", EXPIRES)


@pytest.mark.parametrize(("approval_id", "expires"), [("abc124", EXPIRES), ("abc123", EXPIRES + 1)])
def test_a_nonce_for_another_approval_or_expiry_is_refused(approval_id: str, expires: int) -> None:
    nonce = NONCES.issue("abc123", EXPIRES)
    with pytest.raises(BadLink, match="not issued for this approval"):
        NONCES.check(approval_id, expires, nonce, NOW)


@pytest.mark.parametrize("tamper", [
    lambda n: n[:-1] + ("0" if n[-1] != "0" else "1"),  # one character of the MAC
    lambda n: "f" + n[1:],  # the random part
    lambda n: n.split(".")[0],  # no MAC
    lambda _n: "",
    lambda n: "." + n.split(".")[1],
])
def test_a_tampered_or_missing_nonce_is_refused(tamper: object) -> None:
    nonce = NONCES.issue("abc123", EXPIRES)
    assert callable(tamper)
    with pytest.raises(BadLink):
        NONCES.check("abc123", EXPIRES, tamper(nonce), NOW)


def test_a_nonce_of_another_key_is_refused() -> None:
    nonce = FormNonces(b"another key").issue("abc123", EXPIRES)
    with pytest.raises(BadLink):
        NONCES.check("abc123", EXPIRES, nonce, NOW)


def test_a_nonce_expires_with_the_approval() -> None:
    nonce = NONCES.issue("abc123", EXPIRES)
    NONCES.check("abc123", EXPIRES, nonce, NOW + timedelta(minutes=59))
    with pytest.raises(LinkExpired, match="expired"):
        NONCES.check("abc123", EXPIRES, nonce, NOW + timedelta(hours=1))


def test_nonce_and_link_signature_are_not_interchangeable() -> None:
    """Different keys: a link's signature is no nonce MAC, so holding a link is not holding a form."""
    signer = LinkSigner(KEY)
    rand = "0" * 32
    sig = signer.signature("abc123", "approve", EXPIRES)
    with pytest.raises(BadLink):
        NONCES.check("abc123", EXPIRES, f"{rand}.{sig}", NOW)
    assert FormNonces(KEY, random=lambda: rand).issue("abc123", EXPIRES).split(".")[1] != sig
