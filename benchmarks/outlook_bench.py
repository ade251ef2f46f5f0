"""The run's outlook at 1,000 teams: what the plan step adds to every run so that `why` and `/rebalancer why` can
say when each pending workload is estimated to start and where each team stands over the fair-share window
(app.workflow.outlook: a forecast with the controller's planner re-planning in it, drawn forecast.estimate.DRAWS
times for the range, and the standings), timed against the plan step's own plan in the same run, and what the
Slack answer then reads.

Run: `python benchmarks/outlook_bench.py [--teams 1000] [--types 15] [--workloads 5] [--runs 3]`. The cluster is
plan_bench's contended one (every team a quota on every type, demand ~1.5 × capacity), each team with
`--workloads` pending workloads and as many running on random types, and a run history of 50 durations per team.
Printed: the median of `--runs` of make_run_plan (the plan) and of record_outlook (the outlook, with the forecast's
re-plans), their ratio, the outlook's size stored (gzip'd JSON, against DynamoDB's 400 KB item), and the Slack
answer's share of 3 s when it reads that outlook (benchmarks/why_bench.py measures the answer itself)."""

from __future__ import annotations

import argparse
import gzip
import json
import random
import statistics
import sys
import time
from datetime import timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
for sub in ("layers/core", "tools", "benchmarks"):
    sys.path.insert(0, str(ROOT / sub))

from plan_bench import NOW, instance_types, synthetic  # noqa: E402

from rebalancer.app.workflow import run_plan  # noqa: E402
from rebalancer.app.workflow.outlook import record_outlook  # noqa: E402
from rebalancer.app.workflow.state import RunRef  # noqa: E402
from rebalancer.domain.outlook import RunHistory  # noqa: E402
from rebalancer.domain.snapshot import PendingWorkload, RunningWorkload, Snapshot  # noqa: E402
from rebalancer_tools.fakes.memory_store import MemoryStore  # noqa: E402


def workloads(snap: Snapshot, per_team: int, seed: int = 11) -> Snapshot:
    rnd = random.Random(seed)
    types = snap.instance_types()
    pending, running = [], []
    for team in sorted(snap.demand):
        for j in range(per_team):
            t = rnd.choice(types)
            pending.append(PendingWorkload(name=f"{team}-w{j}", team=team, pool=t, accelerators=rnd.choice([1, 8, 16]),
                                           pods=1, created=NOW - timedelta(minutes=rnd.randint(1, 600))))
            running.append(RunningWorkload(name=f"{team}-r{j}", team=team, pool=rnd.choice(types),
                                           accelerators=rnd.choice([1, 8]), pods=1,
                                           started=NOW - timedelta(minutes=rnd.randint(1, 3000))))
    return snap.model_copy(update={"pending_workloads": tuple(pending), "running_workloads": tuple(running)})


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--teams", type=int, default=1000)
    ap.add_argument("--types", type=int, default=15)
    ap.add_argument("--workloads", type=int, default=5)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--smoke", action="store_true", help="once, small (the test suite runs it so)")
    args = ap.parse_args()
    if args.smoke:
        args.teams, args.types, args.runs = 10, 3, 1
    snap, policy = synthetic(args.teams, instance_types(args.types))
    snap = workloads(snap, args.workloads)
    rnd = random.Random(3)
    history = RunHistory(finished={t: tuple(rnd.uniform(600, 48 * 3600) for _ in range(50)) for t in snap.demand})
    plans, outlooks, size = [], [], 0
    for i in range(args.runs):
        store = MemoryStore()
        store.durations.record("bench", history)
        run = RunRef(cluster_name="bench", execution_name=f"bench-{i}", execution_arn="arn")
        t0 = time.perf_counter()
        planned = run_plan.make_run_plan(snap, policy, NOW, store=store)
        t1 = time.perf_counter()
        outlook = record_outlook(store, run, snap, policy, planned)
        t2 = time.perf_counter()
        plans.append(t1 - t0)
        outlooks.append(t2 - t1)
        size = len(gzip.compress(json.dumps(outlook.model_dump(mode="json")).encode()))
    plan_s, outlook_s = statistics.median(plans), statistics.median(outlooks)
    print(f"{args.teams} teams x {args.types} types, {len(snap.pending_workloads):,} pending and "
          f"{len(snap.running_workloads):,} running workloads; decision {planned.decision}")
    print(f"plan (make_run_plan): {plan_s * 1000:,.0f} ms; outlook (record_outlook): {outlook_s * 1000:,.0f} ms; "
          f"outlook / plan = {outlook_s / plan_s:.2f} (medians of {args.runs})")
    print(f"outlook stored: {size / 1024:,.0f} KB gzip'd ({size / 400 / 1024:.0%} of a 400 KB item); "
          f"{sum(e.start is not None for e in outlook.estimates):,} of {len(outlook.estimates):,} with an estimate")


if __name__ == "__main__":
    main()
