"""`rebalancer apply` and the workflow's steps run the same use cases (rebalancer.app.workflow.runs): the same plan
makes the same SageMaker writes in the same order, leaves the same quotas and scheduler config, and writes audit records
of
the same shape; after either, the other takes the versions left for its own (no console edit). Both run against the
emulator over HTTP, one cluster each (c1 the workflow, c2 the CLI), with the same Kueue demand."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import botocore.client
import pytest
import yaml
from click.testing import CliRunner, Result
from support.five_teams import BEFORE, P5, queueing_kube, setup_cluster
from support.template import create_table

from rebalancer.adapters.aws import AwsClients
from rebalancer.adapters.collect import KubeAccess, collect_snapshot
from rebalancer.adapters.dynamodb.store import Store
from rebalancer.adapters.sagemaker.quota_writer import Poller, QuotaWriter
from rebalancer.adapters.sagemaker.scheduler_config import SchedulerConfigClient
from rebalancer.app.workflow.state import RunRef
from rebalancer.app.workflow.steps.apply import apply
from rebalancer.app.workflow.steps.collect import collect
from rebalancer.app.workflow.steps.plan import plan
from rebalancer.app.workflow.steps.rollback import rollback
from rebalancer.domain.policy import Policy
from rebalancer.errors import RebalancerError
from rebalancer_tools.cli import cli
from rebalancer_tools.emulator.control import Emulator

NOW = datetime(2026, 12, 1, 6, 0, tzinfo=UTC)
TABLE = "rebalancer-table"
TEAMS = "abcde"
# Amounts move (c, d, e queue work), every quota's PreemptTeamTasks is rewritten, the scheduler config is created.
FIRST = """
mode: auto
stability: {min_step: 1, cooldown_minutes: 0, max_move: 64}
approval: {moved_accelerators: 64, max_decrease_percent: 100, console_edits: false}
cluster: {fair_share: Enabled}
teams:
""" + "".join(f"  {t}: {{weight: 1, guarantee: {{{P5}: 2}}, preempt_team_tasks: Never}}\n" for t in TEAMS)
# The next policy: settings only, every one of them last written by the run before.
SECOND = FIRST.replace("preempt_team_tasks: Never", "preempt_team_tasks: LowerPriority").replace(
    "fair_share: Enabled", "fair_share: Disabled")


@pytest.fixture
def kube() -> Iterator[str]:
    with queueing_kube() as url:
        yield url


@dataclass
class Calls:
    """Every SageMaker call made in this process (the CLI runs in it too), in order: (operation, parameters); and
    the ids of the scheduler configs created meanwhile (a rollback may delete them)."""

    made: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    config_ids: list[str] = field(default_factory=list)

    def take(self) -> list[tuple[str, dict[str, Any]]]:
        out, self.made = self.made, []
        return out


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> Calls:
    recorded = Calls()
    real: Callable[..., Any] = botocore.client.BaseClient._make_api_call

    def record(self: Any, operation: str, params: dict[str, Any]) -> Any:
        if self.meta.service_model.service_name != "sagemaker":
            return real(self, operation, params)
        recorded.made.append((operation, json.loads(json.dumps(params, default=str))))
        out = real(self, operation, params)
        if operation == "CreateClusterSchedulerConfig":
            recorded.config_ids.append(str(out["ClusterSchedulerConfigId"]))
        return out

    monkeypatch.setattr(botocore.client.BaseClient, "_make_api_call", record)
    return recorded


def write_policy(tmp_path: Path, text: str, name: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def cli_run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def workflow(aws: AwsClients, table: str, cluster: str, policy_text: str, kube: str, execution: str) -> dict[str, Any]:
    """The workflow's Collect, Plan and Apply steps, as the Lambdas call them, and once written its Observe (Collect
    again: what Kueue preempted); after a failed Apply, its Rollback (where the state machine's Catch goes)."""
    ticks = iter(range(1_000_000))
    store = Store(table, resource=aws.session.resource("dynamodb"), now=lambda: NOW + timedelta(seconds=next(ticks)))
    run = RunRef(cluster_name=cluster, execution_name=execution, execution_arn=f"arn:aws:states:::{execution}")
    def read(c: str) -> Any:
        return collect_snapshot(c, aws, now=NOW, kube=KubeAccess(mode="url", url=kube), metrics_window=None).snapshot

    collect(run, store=store, read_snapshot=read)
    plan(run, store=store, load_policy=lambda _c: Policy.model_validate(yaml.safe_load(policy_text)), now=NOW)
    poller = Poller(sleep=lambda _s: None)
    writer, configs = QuotaWriter(aws.client("sagemaker"), poller), SchedulerConfigClient(aws.client("sagemaker"),
                                                                                           poller)
    try:
        applied = apply(run, store=store, writer=writer, configs=configs)
    except RebalancerError as e:
        return rollback(run, {"Error": type(e).__name__, "Cause": str(e)}, store=store, writer=writer,
                              configs=configs)
    collect(run, store=store, read_snapshot=read, written=True)
    return applied


def sequence(made: list[tuple[str, dict[str, Any]]], ids: dict[str, str]) -> list[Any]:
    """The SageMaker calls, each as (operation, its parameters with ids and ARNs named by what they are): each
    write in its place, the reads between two writes as a sorted list (a poll visits quotas in id order, and ids
    differ between the clusters)."""
    out: list[Any] = []
    reads: list[tuple[str, str]] = []
    for operation, params in made:
        call = (operation, named(json.dumps(params, sort_keys=True), ids))
        if operation.startswith(("Create", "Update", "Delete")):
            out += [sorted(reads), call]
            reads = []
        else:
            reads.append(call)
    return [*out, sorted(reads)]


def writes(calls: list[Any]) -> list[str]:
    return [c[0] for c in calls if isinstance(c, tuple)]


def named(text: str, ids: dict[str, str]) -> str:
    """JSON text with each cluster's ids and names replaced by what they name (the same in c1 and c2)."""
    for real, name in sorted(ids.items(), key=lambda kv: -len(kv[0])):
        text = text.replace(real, name)
    for cluster in ("c1", "c2"):  # names only as whole JSON strings: "c1" may occur inside a hex id
        text = text.replace(f'"{cluster}"', '"<cluster>"').replace(f'"{cluster}-scheduler"', '"<cluster>-scheduler"')
    return text


def ids_of(emu: Emulator, cluster: str) -> dict[str, str]:
    ids = {q["ComputeQuotaId"]: f"<quota of {q['ComputeQuotaTarget']['TeamName']}>" for q in emu.quotas(cluster)}
    ids[emu.cluster_arn(cluster)] = "<cluster arn>"
    return ids


def quotas_now(emu: Emulator, cluster: str) -> dict[str, Any]:
    return {q["ComputeQuotaTarget"]["TeamName"]: (q["ComputeQuotaConfig"], q["ComputeQuotaVersion"])
            for q in emu.quotas(cluster)}


def scheduler_id(aws: AwsClients, cluster: str) -> str:
    """The cluster's live scheduler config, or "" when it has none."""
    arn = aws.client("sagemaker").describe_cluster(ClusterName=cluster)["ClusterArn"]
    config = SchedulerConfigClient(aws.client("sagemaker")).read(arn)
    return config.ClusterSchedulerConfigId if config else ""


def scheduler_now(aws: AwsClients, cluster: str) -> tuple[Any, int]:
    arn = aws.client("sagemaker").describe_cluster(ClusterName=cluster)["ClusterArn"]
    config = SchedulerConfigClient(aws.client("sagemaker")).read(arn)
    assert config is not None
    return dict(config.SchedulerConfig), config.ClusterSchedulerConfigVersion


def shape(record: dict[str, Any]) -> dict[str, Any]:
    """An audit record without what names its run (time, execution, caller, where it came from)."""
    detail = {k: v for k, v in record.get("detail", {}).items() if k not in ("source", "trigger")}
    return {"kind": record["kind"], "outcome": record["outcome"], "before": record.get("before"),
            "after": record.get("after"), "detail": detail}


def normalized(records: list[dict[str, Any]], ids: dict[str, str]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = json.loads(named(json.dumps([shape(r) for r in records], sort_keys=True), ids))
    return out


def run_both(emu: Emulator, aws: AwsClients, kube: str, tmp_path: Path, calls: Calls,
             fault: Callable[[], None] = lambda: None) -> tuple[Result, dict[str, str], list[Any], list[Any]]:
    """FIRST through the workflow on c1, then through `rebalancer apply` on c2, `fault` armed before each; the CLI's
    result, the ids named, and the two SageMaker call sequences."""
    setup_cluster(emu, aws.client("sagemaker"), "c1")
    setup_cluster(emu, aws.client("sagemaker"), "c2")
    table = create_table(aws.client("dynamodb"), TABLE)
    ids = {**ids_of(emu, "c1"), **ids_of(emu, "c2")}
    calls.take()
    fault()
    workflow(aws, table, "c1", FIRST, kube, "c1-20261201T0600")
    by_workflow = calls.take()
    fault()
    result = CliRunner().invoke(cli, ["apply", "--cluster", "c2", "--kube-url", kube, "--metrics-window", "0",
                                      "--policy", write_policy(tmp_path, FIRST, "first.yaml"), "--yes",
                                      "--table", table])
    by_cli = calls.take()
    ids.update(dict.fromkeys(calls.config_ids, "<scheduler config>"))
    return result, ids, sequence(by_workflow, ids), sequence(by_cli, ids)


def test_the_cli_and_the_workflow_make_the_same_calls_quotas_and_audit_records(
        emu: Emulator, aws: AwsClients, kube: str, tmp_path: Path, calls: Calls) -> None:
    result, ids, by_workflow, by_cli = run_both(emu, aws, kube, tmp_path, calls)
    assert result.exit_code == 0, result.output
    table, store = TABLE, Store(TABLE, resource=aws.session.resource("dynamodb"))

    # The same reads, then the scheduler config first (and waited for), then the quotas, decreases first: one
    # sequence, call for call.
    operations = writes(by_workflow)
    assert operations[0] == "CreateClusterSchedulerConfig"
    assert set(operations[1:]) == {"UpdateComputeQuota"}
    assert len(operations) > len(TEAMS)  # every quota's PreemptTeamTasks is rewritten
    assert by_cli == by_workflow
    assert quotas_now(emu, "c2") == quotas_now(emu, "c1")
    assert scheduler_now(aws, "c2") == scheduler_now(aws, "c1")

    # The same records (plan, apply), shaped in one place; only who ran them differs.
    workflow_records, cli_records = store.audit.records("c1"), store.audit.records("c2")
    assert [r["kind"] for r in cli_records] == ["plan", "apply"]
    assert normalized(cli_records, ids) == normalized(workflow_records, ids)
    assert {r["detail"]["source"] for r in workflow_records} == {"controller"}
    assert {r["detail"]["source"] for r in cli_records} == {"cli"}
    assert all(r["who"].startswith("arn:aws:") for r in cli_records)
    # ... and the same versions left, taken by the next plan for our own writes.
    left = {"c1": store.versions.known("c1"), "c2": store.versions.known("c2")}
    assert left["c1"] == left["c2"]
    assert set(left["c1"]) == {*TEAMS, "(cluster)"}
    # The CLI's run is a run like the controller's: its snapshot is stored for `history --snapshot-of`.
    [cli_execution] = {r["execution"] for r in cli_records}
    snap = cli_run("history", "--cluster", "c2", "--table", table, "--snapshot-of", cli_execution)
    assert snap.exit_code == 0, snap.output
    assert json.loads(snap.stdout)["cluster"]["ClusterName"] == "c2"


def test_a_failed_apply_is_rolled_back_by_the_cli_as_by_the_workflow_scheduler_config_included(
        emu: Emulator, aws: AwsClients, kube: str, tmp_path: Path, calls: Calls) -> None:
    def second_quota_write_fails() -> None:
        emu.inject("update-failed", "UpdateComputeQuota", skip=1)

    result, ids, by_workflow, by_cli = run_both(emu, aws, kube, tmp_path, calls, second_quota_write_fails)
    assert result.exit_code == 1
    assert result.stderr.strip().splitlines()[-1].endswith("; rolled back")
    operations = writes(by_workflow)
    assert operations[0] == "CreateClusterSchedulerConfig"
    assert operations[-1] == "DeleteClusterSchedulerConfig"  # the config this run created goes too
    assert by_cli == by_workflow
    emu.settle()
    restored = {cluster: {team: config for team, (config, _) in quotas_now(emu, cluster).items()}
                for cluster in ("c1", "c2")}
    assert restored["c1"] == restored["c2"]
    assert {team: c["ComputeQuotaResources"][0]["Accelerators"] for team, c in restored["c1"].items()} == BEFORE
    assert scheduler_id(aws, "c1") == scheduler_id(aws, "c2") == ""
    store = Store(TABLE, resource=aws.session.resource("dynamodb"))
    cli_records, workflow_records = store.audit.records("c2"), store.audit.records("c1")
    assert [(r["kind"], r["outcome"]) for r in cli_records] == [("plan", "apply"), ("apply", "failed"),
                                                              ("rollback", "restored")]
    assert normalized(cli_records, ids) == normalized(workflow_records, ids)
    assert store.versions.known("c2").keys() == store.versions.known("c1").keys()


def test_a_cli_apply_after_a_workflow_apply_flags_no_console_edit(
        emu: Emulator, aws: AwsClients, kube: str, tmp_path: Path) -> None:
    setup_cluster(emu, aws.client("sagemaker"), "c1")
    table = create_table(aws.client("dynamodb"), "rebalancer-table")
    workflow(aws, table, "c1", FIRST, kube, "c1-20261201T0600")
    second = write_policy(tmp_path, SECOND, "second.yaml")

    result = cli_run("apply", "--cluster", "c1", "--kube-url", kube, "--metrics-window", "0", "--policy", second,
                     "--yes", "--table", table)
    assert result.exit_code == 0, result.output
    assert "policy changed" in result.stdout
    assert "console edit" not in result.stdout
    store = Store(table, resource=aws.session.resource("dynamodb"))
    plan = [r for r in store.audit.records("c1") if r["kind"] == "plan"][-1]
    assert plan["detail"]["source"] == "cli"
    fields = plan["detail"]["field_changes"]
    assert {f["team"] for f in fields} == {*TEAMS, "(cluster)"}
    assert {(f["console_edit"], f["reason"]) for f in fields} == {(False, "policy changed")}
    assert scheduler_now(aws, "c1")[0]["FairShare"] == "Disabled"


def test_without_a_table_the_cli_says_the_versions_are_unknown_as_the_workflow_marks_them(
        emu: Emulator, aws: AwsClients, kube: str, tmp_path: Path) -> None:
    setup_cluster(emu, aws.client("sagemaker"), "c1")
    table = create_table(aws.client("dynamodb"), "rebalancer-table")
    workflow(aws, table, "c1", FIRST, kube, "c1-20261201T0600")
    second = write_policy(tmp_path, SECOND, "second.yaml")

    planned = cli_run("apply", "--cluster", "c1", "--kube-url", kube, "--metrics-window", "0", "--policy", second,
                      "--yes")
    assert planned.exit_code == 0, planned.output
    assert "warning: no audit table (--table / --stack / $REBALANCER_TABLE): the versions the controller's " \
           "writes left are unknown" in planned.stderr
    # As the workflow's plan with nothing recorded: each rewritten setting may be a console edit, and says so.
    for team in TEAMS:
        assert f"{team}: ComputeQuotaVersion: (absent) →" in planned.stdout
    assert "console edit will be replaced" in planned.stdout
    assert [r["kind"] for r in Store(table, resource=aws.session.resource("dynamodb")).audit.records("c1")] == \
        ["plan", "apply"]  # nothing recorded by the CLI run


def test_rollback_of_a_workflow_run_from_the_cli_is_the_workflows_rollback(
        emu: Emulator, aws: AwsClients, kube: str) -> None:
    setup_cluster(emu, aws.client("sagemaker"), "c1")
    table = create_table(aws.client("dynamodb"), TABLE)
    workflow(aws, table, "c1", FIRST, kube, "c1-20261201T0600")
    assert scheduler_id(aws, "c1")
    emu.external_edit("a-quota")  # an admin lowers team a after the run: that edit stays

    result = CliRunner().invoke(cli, ["rollback", "--cluster", "c1", "--run", "c1-20261201T0600", "--table", table,
                                      "--yes"])
    assert result.exit_code == 1, result.output
    assert "(cluster): scheduler config " in result.stdout
    assert "changed by someone else after our write" in result.stdout
    assert result.stderr.startswith("error: rollback incomplete")
    emu.settle()
    now = {team: config for team, (config, _) in quotas_now(emu, "c1").items()}
    assert {t: c["ComputeQuotaResources"][0]["Accelerators"] for t, c in now.items() if t != "a"} == \
        {t: n for t, n in BEFORE.items() if t != "a"}
    assert {t: c["PreemptTeamTasks"] for t, c in now.items()} == {"a": "Never", **dict.fromkeys("bcde",
                                                                                                "LowerPriority")}
    assert scheduler_id(aws, "c1") == ""  # the run created it: deleted
    store = Store(table, resource=aws.session.resource("dynamodb"))
    [record] = [r for r in store.audit.records("c1") if r["kind"] == "rollback"]
    assert (record["execution"], record["outcome"], record["detail"]["source"]) == \
        ("c1-20261201T0600", "incomplete", "cli")
    current = {q["ComputeQuotaTarget"]["TeamName"]: q["ComputeQuotaVersion"] for q in emu.quotas("c1")}
    recorded = store.versions.known("c1")
    assert {t: recorded[t] for t in "bcde"} == {t: current[t] for t in "bcde"}  # the rollback's writes are ours
    assert recorded["a"] != current["a"]  # a holds the admin's edit: the next plan says so


def test_rollback_of_a_cli_apply_run_restores_it(emu: Emulator, aws: AwsClients, kube: str, tmp_path: Path) -> None:
    setup_cluster(emu, aws.client("sagemaker"), "c1")
    table = create_table(aws.client("dynamodb"), TABLE)
    applied = cli_run("apply", "--cluster", "c1", "--kube-url", kube, "--metrics-window", "0", "--policy",
                      write_policy(tmp_path, FIRST, "first.yaml"), "--yes", "--table", table)
    assert applied.exit_code == 0, applied.output
    store = Store(table, resource=aws.session.resource("dynamodb"))
    [execution] = {r["execution"] for r in store.audit.records("c1")}

    typed = execution.removeprefix("c1-")[:6]  # a prefix of the id `history` shows (cli2026…)
    result = cli_run("rollback", "--cluster", "c1", "--run", typed, "--table", table, "--yes")
    assert result.exit_code == 0, result.output
    assert result.stdout.strip().endswith("restored")
    emu.settle()
    assert {t: (c["ComputeQuotaResources"][0]["Accelerators"], c["PreemptTeamTasks"])
            for t, (c, _) in quotas_now(emu, "c1").items()} == {t: (n, "LowerPriority") for t, n in BEFORE.items()}
    assert scheduler_id(aws, "c1") == ""
    assert [(r["kind"], r["outcome"]) for r in store.audit.records("c1")] == [("plan", "apply"), ("apply", "applied"),
                                                                          ("rollback", "restored")]

    versions = {q["ComputeQuotaId"]: q["ComputeQuotaVersion"] for q in emu.quotas("c1")}
    again = cli_run("rollback", "--cluster", "c1", "--run", execution, "--table", table, "--yes")
    assert again.exit_code == 2, again.output
    assert f"run {execution} was rolled back already" in again.stderr
    assert {q["ComputeQuotaId"]: q["ComputeQuotaVersion"] for q in emu.quotas("c1")} == versions
    assert len(store.audit.records("c1")) == 3


@pytest.mark.parametrize(("args", "message"), [
    (["--run", "c1-20261201T0600"], "--run: --run needs the audit table"),
    (["--run", "c1-20261201T0600", "--to", "x.json", "--table", TABLE], "give --to FILE"),
    (["--table", TABLE], "give --to FILE"),
    (["--run", "c1-nosuchrun", "--table", TABLE], "no plan stored for run c1-nosuchrun"),
])
def test_rollback_of_a_run_refuses_bad_input_before_writing(
        emu: Emulator, aws: AwsClients, kube: str, monkeypatch: pytest.MonkeyPatch, args: list[str],
        message: str) -> None:
    monkeypatch.delenv("REBALANCER_TABLE", raising=False)
    setup_cluster(emu, aws.client("sagemaker"), "c1")
    create_table(aws.client("dynamodb"), TABLE)
    versions = {q["ComputeQuotaId"]: q["ComputeQuotaVersion"] for q in emu.quotas("c1")}
    result = CliRunner().invoke(cli, ["rollback", "--cluster", "c1", "--yes", *args])
    assert result.exit_code == 2, result.output
    assert message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert {q["ComputeQuotaId"]: q["ComputeQuotaVersion"] for q in emu.quotas("c1")} == versions
