"""One planning context for every caller, offline too: a controller run (its Collect and Plan steps, as the
Lambdas call them, on the table in moto) is planned again from what it stored — `history --snapshot-of RUN -o S
--context-output C`, then `plan --snapshot S --context C` — and gives the same plan, byte for byte; and `plan
--cluster` given the table plans what the controller plans. The table holds what the context is made of: an
approved active reservation, a budget used up, use over the fair-share window, a quota changed minutes ago, a node
first seen updating long ago, the versions the controller's writes left."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner, Result
from support.five_teams import P5, config, queueing_kube, setup_cluster
from support.template import create_table

from rebalancer.adapters.aws import AwsClients
from rebalancer.adapters.collect import KubeAccess, collect_snapshot
from rebalancer.adapters.dynamodb.store import Store
from rebalancer.adapters.dynamodb.table import unzip
from rebalancer.app.workflow.state import RunRef
from rebalancer.app.workflow.steps.collect import collect
from rebalancer.app.workflow.steps.plan import plan as plan_step
from rebalancer.budgets.metering import EXPECTED_GAP, Reading
from rebalancer.domain.plan import Plan
from rebalancer.domain.policy import Policy
from rebalancer.domain.recorded_context import RecordedContext
from rebalancer.domain.reservation import Reservation
from rebalancer.domain.snapshot import Snapshot
from rebalancer.parsing.loading import load_model_file
from rebalancer.planning.planner import make_plan
from rebalancer_tools.cli import cli
from rebalancer_tools.emulator.control import Emulator

NOW = datetime(2026, 12, 1, 6, 0, tzinfo=UTC)
RUN = "c1-20261201T0600"
POLICY = f"""
mode: auto
stability: {{min_step: 1, cooldown_minutes: 30, max_move: 64}}
approval: {{moved_accelerators: 64, max_decrease_percent: 100}}
fairness: {{window_hours: 24}}
capacity: {{unavailable_grace_minutes: 60}}
teams:
  a: {{weight: 1, guarantee: {{{P5}: 2}}}}
  b: {{weight: 1, guarantee: {{{P5}: 2}}}}
  c: {{weight: 6, guarantee: {{{P5}: 2}}, budget: {{accelerator_hours: 2, on_exhausted: guarantee_only}}}}
  d: {{weight: 1, guarantee: {{{P5}: 2}}}}
  e: {{weight: 1, guarantee: {{{P5}: 2}}}}
"""


@pytest.fixture
def kube() -> Iterator[str]:
    with queueing_kube() as url:
        yield url


def cli_run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False, env={"REBALANCER_TABLE": None})


def seeded(emu: Emulator, aws: AwsClients) -> Store:
    """The cluster, its quotas written two hours ago and team a's ten minutes ago, a node updating; the table with
    what the controller's earlier runs left."""
    emu.set_clock(lambda: NOW - timedelta(hours=2))
    _, quotas = setup_cluster(emu, aws.client("sagemaker"))
    emu.set_clock(lambda: NOW - timedelta(minutes=10))
    a = next(q for q in quotas if q.team == "a")
    aws.client("sagemaker").update_compute_quota(ComputeQuotaId=a.ComputeQuotaId, TargetVersion=a.ComputeQuotaVersion,
                                                 ComputeQuotaConfig=config(12))
    emu.settle()
    emu.set_clock(lambda: NOW)
    updating = emu.nodes("c1")[0]["InstanceId"]
    emu.set_node_status("c1", updating, "SystemUpdating")
    store = Store(create_table(aws.client("dynamodb"), "replay"), resource=aws.session.resource("dynamodb"),
                  now=lambda: NOW)
    store.versions.record("c1", {q.team: q.ComputeQuotaVersion for q in quotas if q.team != "a"}, "c1-earlier")
    store.sightings.record_unavailable("c1", {updating: ("SystemUpdating", NOW - timedelta(minutes=90))})
    store.reservations.put(Reservation(
        reservation_id="r-launch", cluster="c1", team="d", pool=P5, accelerators=8, start=NOW - timedelta(hours=1),
        until=NOW + timedelta(days=1), reason="launch", status="approved", requested_by="alice",
        requested_at=NOW - timedelta(days=1), decided_by="bob"))
    # c ran 8 GPUs (4 its own, 4 borrowed) and b 4 for the last half hour: c's budget of 2 h is used up
    for minutes in (30, 1):
        store.meter.record("c1", Reading(at=NOW - timedelta(minutes=minutes),
                                         rates={"c": {P5: (4.0, 4.0)}, "b": {P5: (4.0, 0.0)}}), EXPECTED_GAP)
    return store


def controller_run(aws: AwsClients, store: Store, kube: str) -> RunRef:
    """The workflow's Collect and Plan steps on c1 at NOW, as the Lambdas call them."""
    run = RunRef(cluster_name="c1", execution_name=RUN, execution_arn=f"arn:aws:states:::{RUN}")
    collect(run, store=store, read_snapshot=lambda c: collect_snapshot(
        c, aws, now=NOW, kube=KubeAccess(mode="url", url=kube), metrics_window=None).snapshot)
    plan_step(run, store=store, load_policy=lambda _c: Policy.model_validate(yaml.safe_load(POLICY)), now=NOW)
    return run


def stored_json(store: Store, kind: str) -> bytes:
    """The run's document exactly as the table holds it (unzipped)."""
    item = store.table.get(f"RUN#{RUN}", kind)
    assert item is not None, kind
    return unzip(item["body"])


def canonical(doc: Any) -> bytes:
    """A document serialised as the table serialises it (rebalancer.adapters.dynamodb.table.pack)."""
    return json.dumps(doc, separators=(",", ":"), sort_keys=True).encode()


def replayed(tmp_path: Path) -> tuple[Result, tuple[Path, Path, Path]]:
    """`history --snapshot-of RUN -o S --context-output C`, then `plan --snapshot S --context C`: the plan's output,
    and the three files."""
    snap, context, policy_file = tmp_path / "snap.json", tmp_path / "context.json", tmp_path / "policy.yaml"
    policy_file.write_text(POLICY)
    got = cli_run("history", "--cluster", "c1", "--table", "replay", "--snapshot-of", RUN, "-o", str(snap),
                  "--context-output", str(context))
    assert got.exit_code == 0, got.output
    offline = cli_run("plan", "--snapshot", str(snap), "--context", str(context), "--policy", str(policy_file),
                      "--format", "json")
    assert offline.exit_code == 0, offline.output
    return offline, (snap, context, policy_file)


def test_a_controller_run_is_planned_again_offline_byte_for_byte(emu: Emulator, aws: AwsClients, kube: str,
                                                                 tmp_path: Path) -> None:
    store = seeded(emu, aws)
    controller_run(aws, store, kube)
    stored = Plan.model_validate_json(stored_json(store, "PLAN"))
    # the context mattered: each of its parts shows in the controller's plan
    rows = {c.team: c for c in (*stored.changes, *stored.held)}
    assert rows["a"].hold is not None
    assert rows["a"].hold.rule == "cooldown"
    assert rows["c"].hold is not None
    assert rows["c"].hold.rule == "budget"
    assert "reservation r-launch for launch" in rows["d"].reason
    assert any("received" in c.reason and "over the last 24 h" in c.reason for c in rows.values())
    assert all("SystemUpdating since 04:30, past the 60 min grace" in c.reason for c in rows.values())

    offline, (snap, context, policy_file) = replayed(tmp_path)
    assert offline.stderr == ""
    assert canonical(json.loads(offline.stdout)) == canonical(stored.output())
    # the whole plan, as the table holds it: the same bytes
    recorded = load_model_file(RecordedContext, str(context))
    again = make_plan(load_model_file(Snapshot, str(snap)), load_model_file(Policy, str(policy_file)),
                      recorded.planned_at, context=recorded.context())
    assert canonical(again.model_dump(mode="json")) == stored_json(store, "PLAN")
    # without the context the same snapshot plans otherwise: the replay is not the snapshot alone
    alone = cli_run("plan", "--snapshot", str(snap), "--policy", str(policy_file), "--format", "json")
    assert "planned from the snapshot alone" in alone.stderr
    assert canonical(json.loads(alone.stdout)) != canonical(stored.output())


def test_plan_on_the_cluster_given_the_table_is_the_controllers_plan(emu: Emulator, aws: AwsClients, kube: str,
                                                                     tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    store = seeded(emu, aws)
    controller_run(aws, store, kube)
    stored = Plan.model_validate_json(stored_json(store, "PLAN"))
    policy_file = tmp_path / "policy.yaml"
    policy_file.write_text(POLICY)
    monkeypatch.setattr("rebalancer_tools.cli.plan_cmd._now", lambda: NOW)
    live = cli_run("plan", "--cluster", "c1", "--kube-url", kube, "--metrics-window", "0", "--table", "replay",
                   "--policy", str(policy_file), "--format", "json")
    assert live.exit_code == 0, live.output
    assert canonical(json.loads(live.stdout)) == canonical(stored.output())
    # and the snapshot command writes the same context beside the snapshot
    monkeypatch.setattr("rebalancer_tools.cli.live_cmds._now", lambda: NOW)
    snap, context = tmp_path / "snap.json", tmp_path / "context.json"
    got = cli_run("snapshot", "--cluster", "c1", "--kube-url", kube, "--metrics-window", "0", "--table", "replay",
                  "-o", str(snap), "--context-output", str(context), "--policy", str(policy_file))
    assert got.exit_code == 0, got.output
    offline = cli_run("plan", "--snapshot", str(snap), "--context", str(context), "--policy", str(policy_file),
                      "--format", "json")
    assert canonical(json.loads(offline.stdout)) == canonical(stored.output())
    # without the table, plan --cluster says what it could not read, and plans otherwise
    alone = cli_run("plan", "--cluster", "c1", "--kube-url", kube, "--metrics-window", "0",
                    "--policy", str(policy_file), "--format", "json")
    assert "planned from the snapshot alone" in alone.stderr
    assert canonical(json.loads(alone.stdout)) != canonical(stored.output())


def test_a_plan_checked_again_and_found_fresh_replays_from_what_it_was_made_from(emu: Emulator, aws: AwsClients,
                                                                                 kube: str, tmp_path: Path) -> None:
    """After an approval the run reads the cluster again (Recollect) and checks the plan (Recheck): found fresh, the
    plan written is the first one, so the run's snapshot stays the one beside its recorded context."""
    from rebalancer.app.workflow.recheck import recheck

    store = seeded(emu, aws)
    run = controller_run(aws, store, kube)
    later = NOW + timedelta(minutes=5)
    emu.set_clock(lambda: later)
    collect(run, store=store, again=True, read_snapshot=lambda c: collect_snapshot(
        c, aws, now=later, kube=KubeAccess(mode="url", url=kube), metrics_window=None).snapshot)
    checked = recheck(run, Policy.model_validate(yaml.safe_load(POLICY)), later, store=store, approval_round=1)
    assert checked.outcome == "fresh"
    taken = {kind: json.loads(stored_json(store, kind))["taken_at"] for kind in ("RECHECK", "SNAPSHOT")}
    assert taken["RECHECK"] != taken["SNAPSHOT"]

    offline, _ = replayed(tmp_path)
    assert canonical(json.loads(offline.stdout)) == canonical(checked.plan.output())
