"""Many clusters, one deployment: a burst of mixed events across N managed clusters through the real trigger, the
template's table and moto's Step Functions (executions are recorded, not interpreted: a run "ends" when the harness
stops it, at random points of the burst, and Step Functions' finish event goes back to the trigger as EventBridge's
RunFinished rule would deliver it). Used by tests/integration (the guarantees) and benchmarks/ (the settle time).

Checked while it runs: at most one run per cluster at a time (a start while another run of that cluster has not
ended is a violation), and no event lost: every event of a cluster is followed by a run of that cluster started
after the event arrived (that run reads the cluster after the change)."""

from __future__ import annotations

import itertools
import json
import random
import threading
import time
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import boto3

from rebalancer.adapters.dynamodb.store import Store
from rebalancer.app.trigger.start import Starter
from rebalancer.domain.clock import system_clock
from rebalancer_tools.local.stack import atomic_dynamodb_writes, run_finished_event
from rebalancer_tools.packaging import template as tpl

REGION = "us-east-1"
ACCOUNT = "123456789012"
KINDS = ("hyperpod-node-health", "hyperpod-cluster-state-change", "hyperpod-cluster-event", "alarm-state-change",
         "malformed-missing-detail", "foreign", "scheduled")
WEIGHTS = (40, 20, 20, 15, 2, 2, 1)  # mostly node trouble; a schedule (every cluster) now and then


@dataclass(slots=True)
class BurstResult:
    clusters: int
    events: int
    outcomes: Counter[str] = field(default_factory=Counter)
    runs: int = 0
    followups: int = 0
    overlaps: int = 0  # starts while another run of the same cluster had not ended
    lost: list[tuple[str, int]] = field(default_factory=list)  # (cluster, arrival) with no run started after it
    settle_seconds: float = 0.0
    max_runs_per_cluster: int = 0

    def summary(self) -> str:
        return (f"{self.events} events over {self.clusters} clusters: {self.runs} runs ({self.followups} follow-ups), "
                f"{self.overlaps} overlapping, {len(self.lost)} lost, settled in {self.settle_seconds:.2f} s")


class _Recorder:
    """Step Functions as the trigger sees it, with the two checks made at each start."""

    def __init__(self, sfn: Any, cluster_of: dict[str, str]):
        self.sfn = sfn
        self.lock = threading.Lock()
        self.seq = itertools.count(1)
        self.running: dict[str, str] = {}  # cluster → execution ARN not yet ended
        self.starts: dict[str, list[int]] = defaultdict(list)
        self.overlaps = 0
        self.followups = 0
        self.cluster_of = cluster_of

    def tick(self) -> int:
        with self.lock:
            return next(self.seq)

    def start_execution(self, **kw: Any) -> Any:
        out = self.sfn.start_execution(**kw)
        cluster = json.loads(kw["input"])["cluster_name"]
        with self.lock:
            if cluster in self.running:
                self.overlaps += 1
            self.running[cluster] = out["executionArn"]
            self.starts[cluster].append(next(self.seq))
            self.followups += json.loads(kw["input"])["trigger"]["kind"] == "follow-up"
        return out

    def end(self, cluster: str) -> dict[str, Any] | None:
        """Stops the cluster's run; its finish event (to deliver to the trigger)."""
        with self.lock:
            arn = self.running.pop(cluster, None)
        if arn is None:
            return None
        self.sfn.stop_execution(executionArn=arn)
        return run_finished_event(self.sfn.describe_execution(executionArn=arn), REGION, ACCOUNT)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.sfn, name)


def _events(clusters: list[str], n: int, rnd: random.Random) -> list[tuple[dict[str, Any], tuple[str, ...]]]:
    """(event, clusters it concerns) for n mixed events."""
    root = tpl.find_root()
    samples = {k: json.loads((root / "events" / f"{k}.json").read_text()) for k in KINDS if k != "foreign"}
    out = []
    for i in range(n):
        kind = rnd.choices(KINDS, WEIGHTS)[0]
        cluster = rnd.choice(clusters)
        event = json.loads(json.dumps(samples["hyperpod-node-health" if kind == "foreign" else kind]))
        event["id"] = f"burst-{i:05d}"
        concerns: tuple[str, ...] = (cluster,)
        if kind in ("hyperpod-node-health", "hyperpod-cluster-state-change"):
            event["detail"]["ClusterName"] = cluster
        elif kind == "hyperpod-cluster-event":
            event["detail"]["EventDetails"]["ClusterName"] = cluster
        elif kind == "alarm-state-change":
            dims = event["detail"]["configuration"]["metrics"][0]["metricStat"]["metric"]["dimensions"]
            dims["ClusterName"] = cluster
        elif kind == "scheduled":
            concerns = tuple(clusters)
        else:  # malformed, or a cluster nobody manages: nothing to plan
            concerns = ()
            if kind == "foreign":
                event["detail"]["ClusterName"] = "not-managed"
        out.append((event, concerns))
    return out


def run_burst(*, clusters: int = 50, events: int = 1000, seed: int = 7, workers: int = 8,
              end_every: int = 40) -> BurstResult:
    """Delivers the events `workers` at a time; after every `end_every` events a random half of the running runs
    end (their finish events delivered concurrently with the next events); at the end every run is ended until none
    is left. Runs inside moto (mock_aws) with the template's table."""
    from moto import mock_aws

    rnd = random.Random(seed)
    names = [f"cluster-{i:02d}" for i in range(clusters)]
    with mock_aws(), atomic_dynamodb_writes():
        recorder, starter = _deployment(names)
        burst = _events(names, events, rnd)
        arrivals: list[tuple[str, int]] = []
        result = BurstResult(clusters=clusters, events=events)
        outcome_lock = threading.Lock()

        def deliver(item: tuple[dict[str, Any], tuple[str, ...]]) -> None:
            event, concerns = item
            arrived = recorder.tick()
            outcome = starter.handle(event)
            with outcome_lock:
                arrivals.extend((c, arrived) for c in concerns)
                result.outcomes[outcome.status] += 1

        def finish(cluster: str) -> None:
            ended = recorder.end(cluster)
            if ended is not None:
                status = starter.handle(ended).status
                with outcome_lock:
                    result.outcomes[f"run ended: {status}"] += 1

        began = time.perf_counter()
        with ThreadPoolExecutor(max_workers=workers) as pool:
            for chunk in range(0, len(burst), end_every):
                with recorder.lock:
                    running = sorted(recorder.running)
                ending = rnd.sample(running, len(running) // 2)
                list(pool.map(lambda job: job(), [lambda c=c: finish(c) for c in ending]
                              + [lambda e=e: deliver(e) for e in burst[chunk:chunk + end_every]]))
            while True:  # settle: end every run (follow-ups start as their predecessors end) until none is left
                with recorder.lock:
                    running = sorted(recorder.running)
                if not running:
                    break
                list(pool.map(finish, running))
        result.settle_seconds = time.perf_counter() - began
        _tally(result, recorder, arrivals)
        return result


def _deployment(names: list[str]) -> tuple[_Recorder, Starter]:
    """The template's table, a state machine whose executions are recorded, and the trigger's Starter managing
    the clusters, in the moto account the burst runs in."""
    ddb = boto3.client("dynamodb", region_name=REGION)
    props = tpl.load_template(tpl.find_root())["Resources"]["Table"]["Properties"]
    ddb.create_table(TableName="burst", KeySchema=props["KeySchema"],
                     AttributeDefinitions=props["AttributeDefinitions"], BillingMode=props["BillingMode"])
    sfn = boto3.client("stepfunctions", region_name=REGION)
    arn = sfn.create_state_machine(name="rebalancer-rebalance", roleArn=f"arn:aws:iam::{ACCOUNT}:role/sfn",
                                   definition=json.dumps({"StartAt": "S", "States": {"S": {"Type": "Succeed"}}}),
                                   )["stateMachineArn"]
    recorder = _Recorder(sfn, {})
    starter = Starter(store=Store("burst", resource=boto3.resource("dynamodb", region_name=REGION)),
                      sfn=recorder, state_machine_arn=arn, managed=tuple(names),
                      lock_ttl=timedelta(hours=24), debounce=timedelta(seconds=120), clock=system_clock)
    return recorder, starter


def _tally(result: BurstResult, recorder: _Recorder, arrivals: list[tuple[str, int]]) -> None:
    """What the burst started: runs, follow-ups, overlaps, the most runs of one cluster, and every event no run
    started after (lost)."""
    result.runs = sum(len(s) for s in recorder.starts.values())
    result.followups = recorder.followups
    result.overlaps = recorder.overlaps
    result.max_runs_per_cluster = max((len(s) for s in recorder.starts.values()), default=0)
    result.lost = [(c, a) for c, a in arrivals if not any(s > a for s in recorder.starts[c])]
