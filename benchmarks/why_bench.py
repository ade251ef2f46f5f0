"""`/rebalancer why` against Slack's three-second window: the approval function's answer to a signed slash command,
through its resolver, on a large cluster's table (boto3 against moto in process: DynamoDB's own latency is not in the
figure; see the README's "Why is my job pending?" for what the answer reads).

Run: `python benchmarks/why_bench.py [--teams 1000] [--older 5000] [--runs 9]`. The table holds `--older` audit records
of earlier runs under the latest run, whose snapshot has `--teams` teams on two pools with five pending workloads
each, and whose outlook (what the plan step stores: each workload's estimated start, each team's standing) the answer
reads and shows. Printed: the median wall time of one answer (warm), the first answer in a fresh interpreter (the
resolver, slack_sdk's blocks and the models imported), the audit records read, and each as a share of Slack's 3 s.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
for sub in ("layers/core", "tools", "tests"):
    sys.path.insert(0, str(ROOT / sub))

SLACK_WINDOW_S = 3.0
for name, value in (("AWS_DEFAULT_REGION", "us-east-1"), ("AWS_ACCESS_KEY_ID", "testing"),
                    ("AWS_SECRET_ACCESS_KEY", "testing")):
    os.environ.setdefault(name, value)


def answer_once(teams: int, older: int, runs: int, outlook: bool = True) -> tuple[list[float], int]:
    from datetime import timedelta
    from urllib.parse import urlencode

    import boto3
    from moto import mock_aws
    from support.approval_api import slack_headers
    from support.clusters import T0, snapshot
    from support.template import create_table

    from rebalancer.adapters.dynamodb.store import Store
    from rebalancer.adapters.stepfunctions import TaskTokens
    from rebalancer.app.approvals.decisions import Approvals
    from rebalancer.app.approvals.http import ApprovalApi
    from rebalancer.app.approvals.signing import LinkSigner
    from rebalancer.app.workflow import audit
    from rebalancer.app.workflow import state as run_docs
    from rebalancer.app.workflow.state import RunRef
    from rebalancer.domain.outlook import Outlook, PoolStanding, Standing, WorkloadEta
    from rebalancer.domain.plan import Plan
    from rebalancer.domain.snapshot import PendingWorkload
    from rebalancer_tools.http_api import http_api_event
    from rebalancer_tools.ticking_clock import TickingClock

    p5, p4 = "ml.p5.48xlarge", "ml.p4d.24xlarge"
    names = [f"team-{i:03d}" for i in range(teams)]
    snap = snapshot({p5: 64, p4: 64}, quotas={t: {p5: 4, p4: 4} for t in names},
                    in_use={t: {p5: 2, p4: 2} for t in names})
    jobs = tuple(PendingWorkload(name=f"{t}-job-{j}", team=t, pool=p5 if j % 2 else p4, accelerators=8 * (j + 1),
                                 pods=j + 1, created=T0 - timedelta(hours=j)) for t in names for j in range(5))
    snap = snap.model_copy(update={"pending_workloads": jobs})
    plan = Plan(cluster_name="test", cluster_arn=snap.cluster.ClusterArn, taken_at=T0, mode="auto",
                allocations={t: {p5: {"accelerators": 4.0}, p4: {"accelerators": 4.0}} for t in names})
    with mock_aws():
        create_table(boto3.client("dynamodb", region_name="us-east-1"))
        clock = TickingClock(T0 - timedelta(days=300))
        store = Store("t", now=clock)
        for i in range(older):
            ref = RunRef(cluster_name="test", execution_name=f"test-{i:06d}", execution_arn="arn")
            audit.planned(store.audit, ref, plan, decision="no_change", known_versions={})
        clock.t = T0
        latest = RunRef(cluster_name="test", execution_name="test-latest", execution_arn="arn")
        run_docs.record_snapshot(store.artifacts, latest, snap)
        store.artifacts.put("test-latest", "PLAN", plan.model_dump(mode="json"))
        stored = Outlook(taken_at=T0, estimates=tuple(
            WorkloadEta(name=j.name, team=j.team, pool=j.pool, start=T0 + timedelta(hours=i % 40),
                        earliest=T0 + timedelta(hours=i % 20), latest=T0 + timedelta(hours=i % 80))
            for i, j in enumerate(jobs)), standing={t: Standing(window_hours=168, pools=(
                PoolStanding(pool=p5, received_hours=300.5, entitled_hours=280.0),
                PoolStanding(pool=p4, received_hours=120.0, entitled_hours=150.25)), budget=None) for t in names})
        if outlook:
            store.artifacts.put("test-latest", "OUTLOOK", stored.model_dump(mode="json"))
        audit.planned(store.audit, latest, plan, decision="no_change", known_versions={})
        read = []
        newest = store.audit.newest

        def counted(cluster: str, page_size: int = 100):  # type: ignore[no-untyped-def]
            for r in newest(cluster, page_size):
                read.append(r)
                yield r

        store.audit.newest = counted  # type: ignore[method-assign]
        api = ApprovalApi(Approvals(store=store, tasks=TaskTokens(None), signer=LinkSigner(b"k" * 32), channels=[],
                                    clock=clock), slack_signing_secret="s", clusters=("test",), runs=store)
        body = urlencode({"command": "/rebalancer", "text": "why team-007"})
        times = []
        for _ in range(runs):
            read.clear()
            event = http_api_event("POST", "https://x/slack/commands", body=body,
                                   headers=slack_headers(body, "s", clock()))
            start = time.perf_counter()
            answer = api.handle(event)
            times.append(time.perf_counter() - start)
            assert answer["statusCode"] == 200, answer
            assert "\"blocks\"" in answer["body"], answer
            assert ("estimated start" in answer["body"]) == outlook, answer
        return times, len(read)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--teams", type=int, default=1000)
    parser.add_argument("--older", type=int, default=5000)
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--once", action="store_true", help=argparse.SUPPRESS)  # the fresh interpreter's run
    args = parser.parse_args()
    if args.once:
        times, _ = answer_once(args.teams, args.older, 1)
        print(times[0])
        return
    times, read = answer_once(args.teams, args.older, args.runs)
    warm = statistics.median(times[1:] or times)
    without, _ = answer_once(args.teams, args.older, args.runs, outlook=False)
    bare = statistics.median(without[1:] or without)
    cold = float(subprocess.run([sys.executable, __file__, "--once", "--teams", str(args.teams), "--older",
                                 str(args.older)], capture_output=True, text=True, check=True).stdout.split()[-1])
    print(f"{args.teams} teams x 2 pools, {args.teams * 5} pending workloads (each with an estimated start), "
          f"{args.older + 1} audit records")
    print(f"warm answer: {warm * 1000:.0f} ms median of {len(times[1:] or times)} "
          f"({warm / SLACK_WINDOW_S:.1%} of Slack's 3 s); audit records read: {read}")
    print(f"first answer in a fresh interpreter: {cold * 1000:.0f} ms ({cold / SLACK_WINDOW_S:.1%} of 3 s)")
    print(f"the same run stored without an outlook: {bare * 1000:.0f} ms warm; with it / without = {warm / bare:.2f}")


if __name__ == "__main__":
    main()
