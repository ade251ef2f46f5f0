"""Shared fixtures. Tests are offline: sockets to anything but loopback are refused. No test sleeps through
botocore's retry back-off: retries happen (and are counted) at once. What botocore sets up for each new session
(its loader, its event handlers) is set up once per test process (support.botocore_caches). What collecting
imported is kept out of the garbage collector's full passes."""

from __future__ import annotations

import gc
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support import botocore_caches

ROOT = Path(__file__).resolve().parent.parent
EVENTS = ROOT / "events"

_real_connect = socket.socket.connect


def _loopback_only(self: socket.socket, address: Any) -> Any:
    host = address[0] if isinstance(address, tuple) else address
    loopback = isinstance(host, str) and (host.startswith("127.") or host in ("localhost", "::1"))
    if loopback or self.family == socket.AF_UNIX:
        return _real_connect(self, address)
    raise ConnectionRefusedError(f"tests are offline: connection to {address!r} blocked")


def pytest_collection_finish(session: pytest.Session) -> None:
    """Collecting imports the product, botocore, moto, hypothesis and the test modules: ~190,000 objects that live as
    long as the process. Each full pass of the garbage collector walked them all, for nothing; frozen, they are left
    out (tests/unit/planning with test_cli_lease: the collector's CPU 3.0 -> 2.0 s, its full passes' 1.5 -> 0.5 s)."""
    gc.freeze()


@pytest.fixture(scope="session", autouse=True)
def _botocore_caches() -> Iterator[None]:
    """botocore's per-session set-up done once per process (support.botocore_caches says what and why)."""
    with pytest.MonkeyPatch.context() as mp:
        botocore_caches.install(mp)
        yield


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(socket.socket, "connect", _loopback_only)


@pytest.fixture(autouse=True)
def _aws_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fake credentials and a region, so no test can reach a real account."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_SESSION_TOKEN", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.delenv("AWS_PROFILE", raising=False)


@pytest.fixture(autouse=True)
def _width_of_a_pipe(monkeypatch: pytest.MonkeyPatch) -> None:
    """The CLI lays tables out at $COLUMNS when it is set (rebalancer_tools.cli.output.width): every test sees what
    a pipe sees, whatever runs it (pytest-xdist's workers set COLUMNS=80, a developer's shell its own width). A test
    about a width sets one itself."""
    monkeypatch.delenv("COLUMNS", raising=False)
    monkeypatch.delenv("LINES", raising=False)


@pytest.fixture(autouse=True)
def _no_retry_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    """botocore retries without its exponential back-off sleeps (up to 20 s a call in standard mode): a test that
    injects a server error waits for nothing, and still sees every attempt."""
    import botocore.retries.standard as standard
    import botocore.retryhandler as legacy

    def no_delay(*_: Any, **__: Any) -> float:
        return 0.0

    monkeypatch.setattr(standard.ExponentialBackoff, "delay_amount", no_delay)
    monkeypatch.setattr(legacy, "delay_exponential", no_delay)
