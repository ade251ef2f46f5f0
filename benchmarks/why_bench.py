"""`/rebalancer why` against Slack's three seconds: what a user who types the slash command waits for when the
approval function is cold, modelled on Lambda's CPU.

Slack drops a slash command's answer that takes more than 3 s. The answer comes from the approval function, which
Slack's commands reach rarely enough that each may find it cold: the interpreter starts, `import app` runs (the
handler, Powertools, the resolver the HTTP requests use), and then the first answer reads the table (the latest run's
snapshot and plan, the newest audit records) and builds the Block Kit reply.

How it is measured: the emulator (moto) serves the template's table on 127.0.0.1 from another thread of this process,
holding `--older` audit records (20,000: most of a year of 15-minute runs) under the latest run, whose snapshot has
`--teams` teams (1,000) on two pools with five pending workloads each, and whose outlook (what the plan step stores:
each workload's estimated start, each team's standing) the answer reads and shows. A fresh interpreter with a
Lambda's environment and this checkout's source on its path imports functions/approval/app.py and answers one signed
slash command through its handler. Its CPU time is what Lambda bills and stretches: the table's answers cost it
only their parsing (the emulator's own work is done in this process, outside the child's CPU time). Each child runs
twice; the first writes the .pyc files (the layer ships them compiled, rebalancer_tools.packaging.layer), the second
is timed.

Modelled: Lambda gives a function a CPU share in proportion to its memory, one full vCPU at 1,769 MB (DESIGN.md), so
CPU time measured here is stretched by 1,769 / MemorySize of the approval function (read from template.yaml); the
goal is at most 2 s of the 3 s, leaving the rest to the network and Slack. This machine's core is not Graviton's;
the figure is an estimate of the order, not a promise. docs/cli/why.md says what the answer reads;
docs/internals/slack-deadline.md gives the figures and the lever chosen.

Run: `python benchmarks/why_bench.py [--teams 1000] [--older 20000] [--runs 5]`; `--smoke` runs it once, small.
"""

from __future__ import annotations

import argparse
import hashlib
import hmac
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

ROOT = Path(__file__).resolve().parent.parent
for sub in ("layers/core", "tools", "tests"):
    sys.path.insert(0, str(ROOT / sub))

SLACK_WINDOW_S = 3.0
GOAL_S = 2.0
FULL_VCPU_MB = 1769
REGION = "us-east-1"
SLACK_SECRET = "bench-slack-signing-secret"
CLUSTER = "test"  # the cluster support.clusters.snapshot builds

CHILD = """
import json, sys, time
c0, w0 = time.process_time(), time.perf_counter()
import app
c1, w1 = time.process_time(), time.perf_counter()
class Context:
    function_name = "bench-approval"; memory_limit_in_mb = 512; aws_request_id = "bench"
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:bench-approval"
answer = app.handler(json.loads(sys.stdin.read()), Context())
c2, w2 = time.process_time(), time.perf_counter()
assert answer["statusCode"] == 200 and "estimated start" in answer["body"], answer
print(json.dumps({"start_cpu": c0, "import_cpu": c1 - c0, "answer_cpu": c2 - c1, "until_answered_cpu": c2,
                  "import_wall": w1 - w0, "answer_wall": w2 - w1, "modules": len(sys.modules)}))
"""


def memory_size() -> int:
    from support.template import resources

    function = resources("AWS::Serverless::Function")["ApprovalFunction"]["Properties"]
    return int(function.get("MemorySize") or _globals()["MemorySize"])


def _globals() -> dict[str, Any]:
    from support.template import template

    return dict(template()["Globals"]["Function"])


def seed(teams: int, older: int) -> dict[str, str]:
    """The table and the secrets the approval function reads; returns its environment's names."""
    import boto3
    from support.clusters import T0, snapshot
    from support.template import create_table

    from rebalancer.adapters.dynamodb.audit import TableAudit
    from rebalancer.adapters.dynamodb.store import Store
    from rebalancer.app.workflow import audit
    from rebalancer.app.workflow import state as run_docs
    from rebalancer.app.workflow.state import RunRef
    from rebalancer.domain.outlook import Outlook, PoolStanding, Standing, WorkloadEta
    from rebalancer.domain.plan import Plan
    from rebalancer.domain.snapshot import PendingWorkload
    from rebalancer_tools.fakes.ticking_clock import TickingClock

    create_table(boto3.client("dynamodb", region_name=REGION), "bench")
    secrets = boto3.client("secretsmanager", region_name=REGION)
    approval_arn = secrets.create_secret(Name="approval-signing", SecretString="k" * 64)["ARN"]
    slack_arn = secrets.create_secret(Name="slack-signing", SecretString=SLACK_SECRET)["ARN"]
    p5, p4 = "ml.p5.48xlarge", "ml.p4d.24xlarge"
    names = [f"team-{i:03d}" for i in range(teams)]
    snap = snapshot({p5: 64, p4: 64}, quotas={t: {p5: 4, p4: 4} for t in names},
                    in_use={t: {p5: 2, p4: 2} for t in names})
    jobs = tuple(PendingWorkload(name=f"{t}-job-{j}", team=t, pool=p5 if j % 2 else p4, accelerators=8 * (j + 1),
                                 pods=j + 1, created=T0 - timedelta(hours=j)) for t in names for j in range(5))
    snap = snap.model_copy(update={"pending_workloads": jobs})
    plan = Plan(cluster_name=CLUSTER, cluster_arn=snap.cluster.ClusterArn, taken_at=T0, mode="auto",
                allocations={t: {p5: {"accelerators": 4.0}, p4: {"accelerators": 4.0}} for t in names})
    clock = TickingClock(T0 - timedelta(days=300))
    store = Store("bench", now=clock)
    # The older records are shaped by the audit use case, then written 25 to a request (one PutItem each would
    # take minutes over loopback).
    items: list[dict[str, Any]] = []
    capture = TableAudit(_Capture(store.table, items))  # type: ignore[arg-type]
    for i in range(older):
        ref = RunRef(cluster_name=CLUSTER, execution_name=f"{CLUSTER}-{i:06d}", execution_arn="arn")
        audit.planned(capture, ref, plan, decision="no_change", known_versions={})
    with boto3.resource("dynamodb", region_name=REGION).Table("bench").batch_writer() as batch:
        for item in items:
            batch.put_item(Item=item)
    clock.t = datetime.now(UTC)
    latest = RunRef(cluster_name=CLUSTER, execution_name=f"{CLUSTER}-latest", execution_arn="arn")
    run_docs.record_snapshot(store.artifacts, latest, snap)
    store.artifacts.put(latest.execution_name, "PLAN", plan.model_dump(mode="json"))
    outlook = Outlook(taken_at=T0, estimates=tuple(
        WorkloadEta(name=j.name, team=j.team, pool=j.pool, start=T0 + timedelta(hours=i % 40),
                    earliest=T0 + timedelta(hours=i % 20), latest=T0 + timedelta(hours=i % 80))
        for i, j in enumerate(jobs)), standing={t: Standing(window_hours=168, pools=(
            PoolStanding(pool=p5, received_hours=300.5, entitled_hours=280.0),
            PoolStanding(pool=p4, received_hours=120.0, entitled_hours=150.25)), budget=None) for t in names})
    store.artifacts.put(latest.execution_name, "OUTLOOK", outlook.model_dump(mode="json"))
    audit.planned(store.audit, latest, plan, decision="no_change", known_versions={})
    return {"TABLE_NAME": "bench", "MANAGED_CLUSTERS": CLUSTER, "POLICY_PARAMETER_PREFIX": "/bench",
            "TOPIC_ARN": f"arn:aws:sns:{REGION}:123456789012:bench", "APPROVAL_SIGNING_SECRET_ARN": approval_arn,
            "SLACK_SIGNING_SECRET_ARN": slack_arn}


class _Capture:
    """The table as TableAudit uses it (its clock, its `table.put_item`), keeping the items instead of writing."""

    def __init__(self, real: Any, items: list[dict[str, Any]]) -> None:
        self.now = real.now
        self.table = self
        self._items = items

    def put_item(self, Item: dict[str, Any]) -> None:  # noqa: N803 (boto3's name)
        self._items.append(Item)


def slash_command(team: str) -> str:
    """A `/rebalancer why` request as Slack signs it, now, in API Gateway's HTTP API event."""
    from rebalancer_tools.fakes.http_api import http_api_event

    body = urlencode({"command": "/rebalancer", "text": f"why {team}", "user_name": "bench"})
    stamp = str(int(time.time()))
    signature = "v0=" + hmac.new(SLACK_SECRET.encode(), f"v0:{stamp}:{body}".encode(), hashlib.sha256).hexdigest()
    event = http_api_event("POST", "https://x/slack/commands", body=body, headers={
        "x-slack-request-timestamp": stamp, "x-slack-signature": signature,
        "content-type": "application/x-www-form-urlencoded"})
    return json.dumps(event)


def cold_answer(env: dict[str, str], pycache: Path | None, team: str) -> dict[str, float]:
    """pycache: where the child writes and reads its .pyc files; None for those beside the sources (--smoke)."""
    from rebalancer_tools.packaging import layer

    function_dir = ROOT / "functions" / "approval"
    command = layer.python_command([function_dir, ROOT / "layers" / "core", layer.site_packages()], CHILD)
    cache = {"PYTHONPYCACHEPREFIX": str(pycache)} if pycache else {}
    child_env = {**env, **cache, "LAMBDA_TASK_ROOT": str(function_dir),
                 "AWS_LAMBDA_FUNCTION_NAME": "bench-approval", "POWERTOOLS_LOG_LEVEL": "WARNING"}
    proc = subprocess.run(command, input=slash_command(team), capture_output=True, text=True, check=False,
                          env=child_env)
    if proc.returncode != 0:
        raise SystemExit(f"the approval function's cold answer failed:\n{proc.stderr[-3000:]}")
    # time.process_time() counts from the process's start: the interpreter's own start is in start_cpu; what the
    # process does after answering (its exit) is no wait of the user's.
    out: dict[str, float] = json.loads(proc.stdout.strip().splitlines()[-1])
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--teams", type=int, default=1000)
    parser.add_argument("--older", type=int, default=20_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--smoke", action="store_true", help="once, small (the test suite runs it so)")
    args = parser.parse_args()
    if args.smoke:
        args.teams, args.older, args.runs = 5, 50, 1

    from rebalancer_tools.emulator.server import EmulatorServer

    with EmulatorServer(quiet=True) as server, tempfile.TemporaryDirectory() as scratch:
        os.environ.update({"AWS_ENDPOINT_URL": server.endpoint, "AWS_DEFAULT_REGION": REGION,
                           "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"})
        names = seed(args.teams, args.older)
        env = {"PATH": os.environ.get("PATH", ""), "AWS_ENDPOINT_URL": server.endpoint, "AWS_REGION": REGION,
               "AWS_DEFAULT_REGION": REGION, "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
               "POWERTOOLS_SERVICE_NAME": "hyperpod-rebalancer",
               "POWERTOOLS_METRICS_NAMESPACE": "HyperPodRebalancer", **names}
        team = f"team-{min(7, args.teams - 1):03d}"
        # A first child writes the .pyc files into the scratch folder; --smoke (whose figure means nothing) skips it
        # and reads those beside the sources, which a compile of every module would cost it 3 s to write.
        pycache = None if args.smoke else Path(scratch)
        if pycache:
            cold_answer(env, pycache, team)
        runs = [cold_answer(env, pycache, team) for _ in range(args.runs)]

    memory = memory_size()
    stretch = FULL_VCPU_MB / memory

    def med(key: str) -> float:
        return statistics.median(r[key] for r in runs) * 1000

    total = med("until_answered_cpu")
    modelled = total * stretch / 1000
    print(f"`/rebalancer why` on a cold approval function: {args.teams} teams x 2 pools, {args.teams * 5} pending "
          f"workloads, {args.older + 1:,} audit records; medians of {len(runs)} fresh interpreters")
    print(f"  CPU here: import app {med('import_cpu'):.0f} ms, first answer {med('answer_cpu'):.0f} ms, from the "
          f"process's start until answered {total:.0f} ms (interpreter start {med('start_cpu'):.0f}); wall of "
          f"import + answer {med('import_wall') + med('answer_wall'):.0f} ms; "
          f"{statistics.median(r['modules'] for r in runs):.0f} modules")
    verdict = "ok" if modelled <= GOAL_S else "OVER"
    print(f"  modelled on Lambda at MemorySize {memory} MB ({memory / FULL_VCPU_MB:.2f} vCPU, x{stretch:.2f}): "
          f"{modelled:.2f} s of CPU ({modelled / SLACK_WINDOW_S:.0%} of Slack's 3 s; goal <= {GOAL_S:.0f} s: "
          f"{verdict})")
    print("  at other sizes: " + ", ".join(f"{mb} MB {total * FULL_VCPU_MB / mb / 1000:.2f} s"
                                           for mb in (512, 1024, FULL_VCPU_MB) if mb != memory))


if __name__ == "__main__":
    main()
