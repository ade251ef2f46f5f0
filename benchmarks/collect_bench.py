"""SageMaker calls per collect at 1,000 teams, against the emulator in process (moto): quotas from
ListComputeQuotas summaries (100 a page), tags read once per warm process. Prints the calls of a first (cold)
collect and of a second one in the same process, beside what one Describe per quota would cost. Run with
`make bench`."""

from __future__ import annotations

import argparse
import math
import os
from collections import Counter
from datetime import UTC, datetime

from moto import mock_aws

from rebalancer.adapters.aws import AwsClients
from rebalancer.adapters.collect import KubeAccess, collect_snapshot
from rebalancer_tools.emulator.control import Emulator
from rebalancer_tools.emulator.install import install

P5 = "ml.p5.48xlarge"
TEAMS = 1000
NOW = datetime(2026, 11, 30, 5, tzinfo=UTC)
os.environ.update(AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing", AWS_DEFAULT_REGION="us-east-1")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--smoke", action="store_true", help="once, small (the test suite runs it so)")
    if parser.parse_args().smoke:
        globals()["TEAMS"] = 20
    install()
    with mock_aws():
        emu = Emulator()
        arn = emu.create_cluster("bench", [("p5", P5, TEAMS)])
        clients = AwsClients(region="us-east-1")
        sm = clients.client("sagemaker")
        for i in range(TEAMS):
            sm.create_compute_quota(Name=f"t{i:04}-quota", ClusterArn=arn, ComputeQuotaTarget={"TeamName": f"t{i:04}"},
                                    ComputeQuotaConfig={"ComputeQuotaResources": [{"InstanceType": P5,
                                                                                   "Accelerators": 8}]})
        emu.settle()
        calls: Counter[str] = Counter()
        sm.meta.events.register("before-call", lambda model, **_: calls.update([model.name]))
        seen: dict[str, dict[str, str]] = {}
        for run in ("first", "second"):
            calls.clear()
            collect_snapshot("bench", clients, now=NOW, kube=KubeAccess(mode="none"), metrics_window=None,
                             known_tags=seen)
            quota_calls = calls["ListComputeQuotas"] + calls["DescribeComputeQuota"]
            print(f"collect ({run} in the process), {TEAMS} teams: {quota_calls} quota calls "
                  f"(1 + N Describe would be {1 + TEAMS}; the target 1 + ceil(N/100) = {1 + math.ceil(TEAMS / 100)}), "
                  f"{sum(calls.values())} SageMaker calls in all: {dict(sorted(calls.items()))}")


if __name__ == "__main__":
    main()
