"""The emulator served over HTTP on loopback, for the SageMaker adapter tests. Its state is reset before each test;
`aws` gives clients configured exactly as the CLI makes them (AWS_ENDPOINT_URL points at the server)."""

from __future__ import annotations

import urllib.request
from collections.abc import Iterator

import botocore.endpoint
import pytest
from support.fake_clock import FakeClock, FakeTime

from rebalancer.adapters.aws import AwsClients
from rebalancer_tools.emulator.control import Emulator
from rebalancer_tools.emulator.server import EmulatorServer


@pytest.fixture(scope="session")
def emulator_endpoint() -> Iterator[str]:
    with EmulatorServer(quiet=True) as server:
        yield server.endpoint


@pytest.fixture
def backoff(monkeypatch: pytest.MonkeyPatch) -> FakeTime:
    fake = FakeTime()
    monkeypatch.setattr(botocore.endpoint, "time", fake)
    return fake


@pytest.fixture
def emu(emulator_endpoint: str, monkeypatch: pytest.MonkeyPatch, backoff: FakeTime) -> Emulator:
    urllib.request.urlopen(urllib.request.Request(f"{emulator_endpoint}/moto-api/reset", method="POST")).close()
    monkeypatch.setenv("AWS_ENDPOINT_URL", emulator_endpoint)
    return Emulator()


@pytest.fixture
def aws(emu: Emulator) -> AwsClients:
    return AwsClients(region="us-east-1")


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()
