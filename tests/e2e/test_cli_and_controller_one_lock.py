"""One writer at a time, whichever it is: `rebalancer apply` and the controller's runs take the one per-cluster lock.
End to end: the real state machine on moto's interpreter with the project's handlers (IAM enforced), the HyperPod
emulator, a loopback Kueue API, and the CLI run in process against the stack's table, on one clock.

- A CLI apply racing a controller run: the event that arrives while the CLI writes starts no run; the CLI, done,
  starts the follow-up run itself; every write of the CLI comes before every write of the run, and both are in the
  audit log, one after the other.
- A controller run holding the lock (waiting for its approval): the CLI is refused ("held by run … since …") and
  writes nothing; once the run has ended the CLI writes, and is recorded."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import botocore.client
import pytest
from click.testing import CliRunner, Result
from support.approval_stack import POLICY as APPROVE
from support.clock import ticking
from support.emulator import EmulatorHandle, in_process_emulator
from support.events import load_event
from support.kube_api import pod_set, serve, workload

from rebalancer.app import wiring
from rebalancer.app.notifications.notify import approval_id_of
from rebalancer_tools.cli import cli, live_cmds
from rebalancer_tools.emulator import DEMO
from rebalancer_tools.fakes.ticking_clock import TickingClock
from rebalancer_tools.local.stack import STACK, LocalStack

pytestmark = pytest.mark.slow

CLUSTER = DEMO.cluster_name
P5 = "ml.p5.48xlarge"
AUTO = APPROVE.replace("mode: approve", "mode: auto")
TABLE = f"{STACK}-table"
WRITES = ("Create", "Update", "Delete")


@pytest.fixture
def world(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[EmulatorHandle, str, TickingClock]]:
    clock = ticking()
    monkeypatch.setattr(live_cmds, "_now", clock)  # the CLI on the functions' time line
    monkeypatch.delenv("REBALANCER_TABLE", raising=False)
    with in_process_emulator(seed_demo=True, clock=clock) as emu, serve() as (url, kube):
        kube.add(workload("research", "pretrain", [pod_set(3, {"nvidia.com/gpu": 8}, P5)]),
                 workload("training", "finetune", [pod_set(1, {"nvidia.com/gpu": 8}, P5)], admitted_on=P5))
        yield emu, url, clock


def node_event() -> dict[str, Any]:
    event = load_event("hyperpod-node-health")
    event["detail"]["ClusterName"] = CLUSTER
    return event


def cli_apply(tmp_path: Path, kube_url: str) -> Result:
    policy = tmp_path / "policy.yaml"
    policy.write_text(AUTO)
    return CliRunner().invoke(cli, ["apply", "--cluster", CLUSTER, "--kube-url", kube_url, "--metrics-window", "0",
                                    "--policy", str(policy), "--yes", "--table", TABLE, "--poll-interval", "0.1"])


def quotas(emu: EmulatorHandle) -> dict[str, Any]:
    sm = emu.sagemaker
    return {s["ComputeQuotaTarget"]["TeamName"]: (s["ComputeQuotaConfig"], s["ComputeQuotaVersion"])
            for s in sm.list_compute_quotas(ClusterArn=emu.emulator.cluster_arn(CLUSTER))["ComputeQuotaSummaries"]}


def test_a_cli_apply_racing_a_controller_run_one_at_a_time_each_recorded(
        world: tuple[EmulatorHandle, str, TickingClock], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    emu, kube_url, clock = world
    with LocalStack(clusters={CLUSTER: AUTO}, kube_url=kube_url, now=clock) as stack:
        writes: list[tuple[str, str]] = []  # (who, operation): the CLI writes on this thread, runs on moto's
        during: list[dict[str, Any]] = []
        real = botocore.client.BaseClient._make_api_call
        cli_thread = threading.current_thread()

        def record(client: Any, operation: str, params: dict[str, Any]) -> Any:
            if client.meta.service_model.service_name == "sagemaker" and operation.startswith(WRITES):
                who = "cli" if threading.current_thread() is cli_thread else "controller"
                writes.append((who, operation))
                if who == "cli" and not during:  # a node fails while the CLI writes
                    during.append(stack.trigger(node_event()))
            return real(client, operation, params)

        monkeypatch.setattr(botocore.client.BaseClient, "_make_api_call", record)
        result = cli_apply(tmp_path, kube_url)
        assert result.exit_code == 0, result.output
        [outcome] = during
        assert outcome["status"] == "debounced", outcome  # no run started under the CLI's lease
        [followup] = stack.executions()  # started by the CLI when it let go
        assert "a controller run was asked for during this command (" in result.stderr
        assert stack.wait(followup)["status"] == "SUCCEEDED"

        # One at a time: every write of the CLI before every write of the run.
        who = [w for w, _ in writes]
        assert who[0] == "cli"
        assert who == sorted(who, key=lambda w: w != "cli")
        # Each recorded: the CLI's run, then the follow-up's, never interleaved.
        audit = [r for r in stack.audit(CLUSTER) if r["kind"] not in ("cluster-event",)]
        runs = [r["execution"] for r in audit]
        cli_run, run = runs[0], followup.rsplit(":", 1)[-1]
        assert cli_run.startswith(f"{CLUSTER}-cli")
        assert [(r["kind"], r["outcome"]) for r in audit if r["execution"] == cli_run] == [("plan", "apply"),
                                                                                             ("apply", "applied")]
        assert runs == [cli_run] * runs.count(cli_run) + [run] * runs.count(run)
        [started] = [r for r in audit if r["kind"] == "trigger"]
        assert started["execution"] == run
        assert started["detail"]["summary"] == f"changes that arrived during run {cli_run}"
        assert any(r["kind"] == "plan" and r["execution"] == run for r in audit)
        assert not emu.emulator.monitor.violations(api_only=True)


def test_a_cli_apply_meeting_a_controller_run_is_refused_until_the_run_has_ended(
        world: tuple[EmulatorHandle, str, TickingClock], tmp_path: Path) -> None:
    emu, kube_url, clock = world
    with LocalStack(clusters={CLUSTER: APPROVE}, kube_url=kube_url, now=clock) as stack:
        assert stack.trigger(node_event())["status"] == "started"
        [arn] = stack.executions()
        stack.wait_for_state(arn, "RequestApproval")  # the run holds the lock while it waits for an admin
        # The state is entered before its Lambda has stored the request: wait for the record itself.
        stack.wait_until(lambda: wiring.store().approvals.get(approval_id_of(arn)) is not None, timeout=20,
                         what="the approval request")
        before = quotas(emu)
        refused = cli_apply(tmp_path, kube_url)
        assert refused.exit_code == 1, refused.output
        name = arn.rsplit(":", 1)[-1]
        line = refused.stderr.strip().splitlines()[-1]
        assert line.startswith(f"error: cluster {CLUSTER} is locked: held by run {name} since 2026-11-30 ")
        assert line.endswith("UTC; try again when it ends")
        assert quotas(emu) == before
        assert not any(r["execution"].startswith(f"{CLUSTER}-cli") for r in stack.audit(CLUSTER))

        # The admin rejects the run's plan: the run ends, and its lock with it.
        waiting = wiring.store().approvals.get(approval_id_of(arn))
        assert waiting is not None
        stack.client("stepfunctions").send_task_failure(taskToken=waiting.task_token, error="ApprovalRejected",
                                                        cause="rejected by ann")
        assert stack.wait(arn)["status"] != "RUNNING"
        done = cli_apply(tmp_path, kube_url)
        assert done.exit_code == 0, done.output
        assert quotas(emu) != before
        cli_records = [(r["kind"], r["outcome"]) for r in stack.audit(CLUSTER)
                       if r["execution"].startswith(f"{CLUSTER}-cli")]
        assert cli_records == [("plan", "apply"), ("apply", "applied")]
