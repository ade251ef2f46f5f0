"""What one alarm costs the trigger by the number of metrics it carries: the sample alarm (one metric) against one of
10,000 metrics of unmanaged clusters and one of a managed cluster, through `Starter.handle` (parse, keep the
managed clusters, lock, start) with the in-memory store and a stand-in for Step Functions. Process time per event,
median of several runs; the ratio of the two is the figure (a shared machine moves both). Run with `make bench`."""

from __future__ import annotations

import json
import logging
import os
import statistics
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RUNS = 15
METRICS = 10_000
SM = "arn:aws:states:us-east-1:123456789012:stateMachine:rebalancer-rebalance"
T0 = datetime(2026, 11, 30, 12, tzinfo=UTC)


class Sfn:
    def start_execution(self, **_: Any) -> dict[str, Any]:
        return {}

    def describe_execution(self, **_: Any) -> dict[str, Any]:
        return {"status": "SUCCEEDED"}


def metric(cluster: str) -> dict[str, Any]:
    return {"id": "m1", "returnData": True, "metricStat": {"period": 300, "stat": "Maximum", "metric": {
        "namespace": "HyperPodRebalancer", "name": "StrandedAccelerators", "dimensions": {"ClusterName": cluster}}}}


def alarm(clusters: list[str]) -> dict[str, Any]:
    event: dict[str, Any] = json.loads((ROOT / "events" / "alarm-state-change.json").read_text())
    event["detail"]["configuration"]["metrics"] = [metric(c) for c in clusters]
    return event


def cpu_ms(event: dict[str, Any]) -> tuple[float, str]:
    from rebalancer.app.trigger.start import Starter
    from rebalancer_tools.fakes.memory_store import MemoryStore

    times, status = [], ""
    for _ in range(RUNS):
        store = MemoryStore(now=lambda: T0)
        starter = Starter(store=store, sfn=Sfn(), state_machine_arn=SM, managed=("ml-cluster",),
                          lock_ttl=timedelta(minutes=30), debounce=timedelta(minutes=5), clock=store.now)
        t0 = time.process_time()
        status = starter.handle(event).status
        times.append((time.process_time() - t0) * 1000)
    return statistics.median(times), status


def main() -> None:
    global METRICS, RUNS
    if sys.argv[1:] == ["--smoke"]:  # once, small (the test suite runs it so)
        METRICS, RUNS = 100, 1
    os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")
    logging.getLogger("aws_lambda_powertools").setLevel(logging.WARNING)
    from rebalancer.app.observability import logger

    logger.setLevel("WARNING")
    one, one_status = cpu_ms(alarm(["ml-cluster"]))
    many, many_status = cpu_ms(alarm([f"tenant-{i:05d}" for i in range(METRICS)] + ["ml-cluster"]))
    size = len(json.dumps(alarm([f"tenant-{i:05d}" for i in range(METRICS)] + ["ml-cluster"])))
    print(f"trigger: an alarm of 1 metric {one:.2f} ms ({one_status}); of {METRICS + 1:,} metrics ({size // 1024} KB) "
          f"{many:.1f} ms ({many_status}): x{many / one:.0f}, {(many - one) / METRICS * 1000:.1f} µs a metric "
          f"(process time, median of {RUNS})")


if __name__ == "__main__":
    main()
