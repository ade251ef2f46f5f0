"""The HyperPod task-governance emulator for tests: moto's SageMaker plus compute quotas, scheduler configs,
server-side rules, an invariant monitor, fault injection and cluster controls (`rebalancer_tools.emulator`).

Two ways to run it, each yielding an `EmulatorHandle` with `.client(...)` (a boto3 client factory), `.emulator`
(the control API, `rebalancer_tools.emulator.Emulator`) and `.endpoint` (None in-process):

    from support.emulator import in_process_emulator, http_emulator

    def test_something():
        with http_emulator(seed_demo=True) as emu:            # ThreadedMotoServer-like server on 127.0.0.1
            sm = emu.client()                                  # boto3 SageMaker client, endpoint_url set
            quotas = sm.list_compute_quotas(ClusterArn=emu.demo.cluster_arn)["ComputeQuotaSummaries"]
            emu.emulator.fail_node(DEMO.cluster_name, "gpu-p5-0")   # node health (ListClusterNodes shows it)
            emu.emulator.inject("throttle", "UpdateComputeQuota", times=3)   # faults, see FaultRule
            emu.emulator.set_transition_reads(2)               # Updating seen by the next 2 Describe calls
            assert not emu.emulator.monitor.violations(api_only=True)       # the invariant monitor
            emu.emulator.events        # EventBridge-shaped node-health / state-change events to hand to the trigger
            emu.emulator.external_edit("research-quota")   # an admin edits it in the console: version + 1

Or as pytest fixtures (import them into your test module or conftest): `emulator` (in-process, mock_aws),
`http_emulator_server` (over HTTP), `any_emulator` (both, parametrized) and `demo_emulator` (HTTP, seeded). Every
test retries without botocore's back-off sleeps (tests/conftest.py), so throttling tests stay fast.

The demo cluster (`rebalancer_tools.emulator.DEMO`): cluster `demo-hyperpod` with groups gpu-p5 (ml.p5.48xlarge ×4),
trainium-trn1 (ml.trn1.32xlarge ×2), gpu-g5 (ml.g5.12xlarge ×3); node ids are `<group>-<i>`; five teams
(research, training, inference, data-science, platform) with quotas named `<team>-quota` that sum to capacity.
"""

from __future__ import annotations

import atexit
import functools
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import boto3
import pytest
from botocore.config import Config
from moto import mock_aws

from rebalancer_tools.emulator import DEFAULT_ACCOUNT, DEFAULT_REGION, Emulator, SeededDemo, seed_demo
from rebalancer_tools.emulator.install import install
from rebalancer_tools.emulator.server import EmulatorServer

REGION = DEFAULT_REGION
ACCOUNT = DEFAULT_ACCOUNT


@dataclass
class EmulatorHandle:
    emulator: Emulator
    endpoint: str | None
    demo: SeededDemo | None = None
    region: str = REGION

    def client(self, service: str = "sagemaker", *, max_attempts: int | None = None,
               parameter_validation: bool = True) -> Any:
        """A boto3 client for `service` pointed at this emulator, in botocore's standard retry mode (throttling
        and 5xx are retried; `max_attempts` counts attempts in all, the first included, default 3);
        `parameter_validation=False` lets invalid requests reach the server. Clients are cached (making a
        SageMaker client costs ~0.2 s)."""
        return _client(service, self.region, self.endpoint, max_attempts, parameter_validation)

    @property
    def sagemaker(self) -> Any:
        return self.client("sagemaker")

    def accelerators(self, cluster: str, team: str, instance_type: str) -> int | None:
        """The accelerators `team`'s compute quota holds on `instance_type` (0 without an entry for it), read over
        the wire; None when the team has no quota."""
        sm = self.sagemaker
        for s in sm.list_compute_quotas(ClusterArn=self.emulator.cluster_arn(cluster))["ComputeQuotaSummaries"]:
            q = sm.describe_compute_quota(ComputeQuotaId=s["ComputeQuotaId"])
            if q["ComputeQuotaTarget"]["TeamName"] == team:
                return next((int(r.get("Accelerators", 0)) for r in q["ComputeQuotaConfig"]["ComputeQuotaResources"]
                             if r["InstanceType"] == instance_type), 0)
        return None


@functools.cache
def _client(service: str, region: str, endpoint: str | None, max_attempts: int | None,
            parameter_validation: bool) -> Any:
    # Always botocore's standard mode: its back-off is looked up per retry, so the tests' no-back-off patch also reaches
    # clients cached before the fixture ran (legacy mode binds its delay function when the client is made).
    retries: dict[str, Any] = {"mode": "standard"}
    if max_attempts:
        retries["total_max_attempts"] = max_attempts
    config = Config(retries=retries, parameter_validation=parameter_validation)  # type: ignore[arg-type]
    session = boto3.session.Session(aws_access_key_id="testing", aws_secret_access_key="testing",
                                    aws_session_token="testing", region_name=region)
    make: Callable[..., Any] = session.client  # boto3-stubs overloads want a literal service name
    return make(service, endpoint_url=endpoint, config=config)


@contextmanager
def in_process_emulator(*, seed_demo: bool = False, region: str = REGION,
                        clock: Callable[[], datetime] | None = None) -> Iterator[EmulatorHandle]:
    """moto's `mock_aws`: boto3 calls never leave the process. `clock` stamps the emulator's resources (seeded ones
    included), so a test that gives its functions the same clock sees quota ages on one time line."""
    install()
    with mock_aws():
        handle = EmulatorHandle(Emulator(ACCOUNT, region, clock=clock), None, region=region)
        if seed_demo:
            handle.demo = _seed(handle)
        yield handle


@functools.cache
def shared_server() -> EmulatorServer:
    """One server per test process (port chosen by the OS), so boto3 clients can be reused between tests."""
    server = EmulatorServer(quiet=True)
    server.start()
    atexit.register(server.stop)
    return server


@contextmanager
def http_emulator(*, seed_demo: bool = False, region: str = REGION) -> Iterator[EmulatorHandle]:
    """The emulator on 127.0.0.1 (a free port); real HTTP between boto3 and moto. All moto state is reset before
    and after, so tests do not see each other's clusters, quotas or faults."""
    server = shared_server()
    _reset(server.endpoint)
    handle = EmulatorHandle(Emulator(ACCOUNT, region), server.endpoint, region=region)
    try:
        if seed_demo:
            handle.demo = _seed(handle)
        yield handle
    finally:
        _reset(server.endpoint)


def _seed(handle: EmulatorHandle) -> SeededDemo:
    return seed_demo(handle.emulator)


def _reset(endpoint: str) -> None:
    req = urllib.request.Request(f"{endpoint}/moto-api/reset", data=b"", method="POST")
    with urllib.request.urlopen(req, timeout=10):
        pass


@pytest.fixture
def emulator() -> Iterator[EmulatorHandle]:
    with in_process_emulator() as handle:
        yield handle


@pytest.fixture
def http_emulator_server() -> Iterator[EmulatorHandle]:
    with http_emulator() as handle:
        yield handle


@pytest.fixture
def demo_emulator() -> Iterator[EmulatorHandle]:
    with http_emulator(seed_demo=True) as handle:
        yield handle


@pytest.fixture(params=["in-process", "http"])
def any_emulator(request: pytest.FixtureRequest) -> Iterator[EmulatorHandle]:
    factory: Callable[..., Any] = in_process_emulator if request.param == "in-process" else http_emulator
    with factory() as handle:
        yield handle
