"""The writers Apply, Verify and Rollback are given: quotas and the cluster's scheduler config over the process's
SageMaker client, polled until settled (or once per call, for Verify, whose waiting is the state machine's)."""

from __future__ import annotations

from rebalancer.adapters.sagemaker.quota_writer import Poller, QuotaWriter
from rebalancer.adapters.sagemaker.scheduler_config import SchedulerConfigClient
from rebalancer.app import wiring


def _poller(poll_once: bool) -> Poller:
    return Poller(sleep=lambda _s: None, timeout=0.0) if poll_once else Poller()


def writer(*, poll_once: bool = False) -> QuotaWriter:
    return QuotaWriter(wiring.aws_clients().client("sagemaker"), poller=_poller(poll_once))


def scheduler_configs(*, poll_once: bool = False) -> SchedulerConfigClient:
    return SchedulerConfigClient(wiring.aws_clients().client("sagemaker"), poller=_poller(poll_once))
