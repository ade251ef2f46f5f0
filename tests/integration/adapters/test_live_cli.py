"""`rebalancer snapshot | plan --cluster | apply | rollback` against the emulator over HTTP (AWS_ENDPOINT_URL) and
the loopback Kueue API server, through the real CLI entry point."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
import yaml
from click.testing import CliRunner, Result
from support.five_teams import BEFORE, P5, config, gpus, queueing_kube, raised, setup_cluster, violations
from support.kube_api import KubeState, node, serve
from support.template import create_table

from rebalancer.adapters.aws import AwsClients
from rebalancer.adapters.dynamodb.store import Store
from rebalancer.app.workflow.run_plan import known_versions_for
from rebalancer.domain.policy import Policy
from rebalancer.domain.snapshot import Snapshot
from rebalancer.planning.context import planning_context
from rebalancer.planning.planner import make_plan
from rebalancer_tools.cli import cli
from rebalancer_tools.emulator.control import Emulator

POLICY = """
mode: auto
stability: {min_step: 1, cooldown_minutes: 0, max_move: 64}
approval: {moved_accelerators: 64, max_decrease_percent: 100}
teams:
  a: {weight: 1, guarantee: {ml.p5.48xlarge: 2}}
  b: {weight: 1, guarantee: {ml.p5.48xlarge: 2}}
  c: {weight: 1, guarantee: {ml.p5.48xlarge: 2}}
  d: {weight: 1, guarantee: {ml.p5.48xlarge: 2}}
  e: {weight: 1, guarantee: {ml.p5.48xlarge: 2}}
"""


@pytest.fixture
def kube() -> Iterator[str]:
    with queueing_kube() as url:
        yield url


@pytest.fixture
def policy(tmp_path: Path) -> str:
    p = tmp_path / "policy.yaml"
    p.write_text(POLICY)
    return str(p)


def run(*args: str, input: str | None = None) -> Result:
    # COLUMNS unset: the tables come out as to a pipe, one line per row, whatever the caller's environment says
    # (pytest-xdist's workers set COLUMNS=80).
    return CliRunner().invoke(cli, list(args), input=input, catch_exceptions=False, env={"COLUMNS": None})


def test_snapshot_reads_cluster_quotas_and_demand(emu: Emulator, aws: AwsClients, kube: str,
                                                  tmp_path: Path) -> None:
    arn, _ = setup_cluster(emu, aws.client("sagemaker"))
    out = tmp_path / "snap.json"
    result = run("snapshot", "--cluster", "c1", "--kube-url", kube, "--metrics-window", "0", "-o", str(out))
    assert result.exit_code == 0, result.output
    snap = Snapshot.model_validate_json(out.read_text())
    assert snap.cluster.ClusterArn == arn
    assert snap.healthy_nodes() == {P5: 4}
    assert {q.team: q.ComputeQuotaConfig.ComputeQuotaResources[0].Accelerators for q in snap.quotas} == BEFORE
    assert snap.demand["c"][P5].pending.accelerators == 8
    assert snap.demand["a"][P5].in_use.accelerators == 4


def test_snapshot_without_kube_says_so(emu: Emulator, aws: AwsClients) -> None:
    setup_cluster(emu, aws.client("sagemaker"))
    result = run("snapshot", "--cluster", "c1", "--no-kube")
    assert result.exit_code == 0
    assert "warning: Kueue not read (--no-kube)" in result.stderr
    assert Snapshot.model_validate_json(result.stdout).demand == {}


def test_plan_on_the_live_cluster_writes_nothing(emu: Emulator, aws: AwsClients, kube: str, policy: str) -> None:
    setup_cluster(emu, aws.client("sagemaker"))
    result = run("plan", "--cluster", "c1", "--kube-url", kube, "--policy", policy, "--format", "json")
    assert result.exit_code == 0, result.output
    plan = json.loads(result.stdout)
    assert plan["requests"]
    assert gpus(emu) == BEFORE


def test_apply_then_rollback(emu: Emulator, aws: AwsClients, kube: str, policy: str, tmp_path: Path) -> None:
    arn, _ = setup_cluster(emu, aws.client("sagemaker"))
    planned = json.loads(run("plan", "--cluster", "c1", "--kube-url", kube, "--policy", policy,
                             "--format", "json").stdout)
    moves = {c["team"]: c["after"] - c["before"] for c in planned["changes"]}
    assert min(moves.values()) < 0 < max(moves.values())  # both directions: the order matters
    saved = tmp_path / "before.json"
    result = run("apply", "--cluster", "c1", "--kube-url", kube, "--policy", policy, "--yes",
                 "--save-snapshot", str(saved))
    assert result.exit_code == 0, result.output
    assert "every quota settled" in result.stdout
    expected = {t: int(v[P5]["accelerators"]) for t, v in planned["allocations"].items()}
    assert gpus(emu) == expected
    assert violations(emu, arn) == []

    result = run("rollback", "--cluster", "c1", "--to", str(saved), "--yes")
    assert result.exit_code == 0, result.output
    assert gpus(emu) == BEFORE
    assert violations(emu, arn) == []


def test_rollback_given_the_audit_table_shows_in_history(emu: Emulator, aws: AwsClients, tmp_path: Path) -> None:
    setup_cluster(emu, aws.client("sagemaker"))
    table = create_table(aws.client("dynamodb"), "rebalancer-table")
    saved = tmp_path / "before.json"
    saved.write_text(run("snapshot", "--cluster", "c1", "--no-kube").stdout)
    emu.external_edit("a-quota", {"ComputeQuotaConfig": config(2)})

    result = run("rollback", "--cluster", "c1", "--to", str(saved), "--yes", "--table", table)
    assert result.exit_code == 0, result.output
    assert gpus(emu) == BEFORE
    history = run("history", "--cluster", "c1", "--table", table, "--json")
    assert history.exit_code == 0, history.output
    records = [json.loads(line) for line in history.stdout.splitlines()]
    assert [(r["kind"], r["outcome"]) for r in records] == [("rollback", "restored")]
    assert records[0]["before"]["a"] == {P5: 2}
    assert records[0]["after"]["a"] == {P5: BEFORE["a"]}
    # the other teams' quotas were already as saved: nothing happened to them, and the record says nothing of them
    assert set(records[0]["before"]) == set(records[0]["after"]) == {"a"}
    assert records[0]["detail"]["source"] == "cli"
    assert records[0]["who"].startswith("arn:aws:")
    table_view = run("history", "--cluster", "c1", "--table", table).stdout
    assert f"a p5.48xlarge 2→{BEFORE['a']}" in table_view
    restored = {q.team: q.ComputeQuotaVersion for q in
                Snapshot.model_validate_json(run("snapshot", "--cluster", "c1", "--no-kube").stdout).quotas}
    assert Store(table, resource=aws.session.resource("dynamodb")).versions.known("c1") == {"a": restored["a"]}


def test_rollback_with_a_missing_audit_table_stops_before_writing_and_without_one_just_restores(
        emu: Emulator, aws: AwsClients, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    setup_cluster(emu, aws.client("sagemaker"))
    saved = tmp_path / "before.json"
    saved.write_text(run("snapshot", "--cluster", "c1", "--no-kube").stdout)
    emu.external_edit("a-quota", {"ComputeQuotaConfig": config(2)})
    monkeypatch.setenv("REBALANCER_TABLE", "no-such-table")
    result = CliRunner().invoke(cli, ["rollback", "--cluster", "c1", "--to", str(saved), "--yes"])
    assert result.exit_code == 1
    assert result.stderr.startswith("error: DescribeTable on audit table no-such-table: ResourceNotFoundException")
    assert len(result.stderr.strip().splitlines()) == 1
    monkeypatch.delenv("REBALANCER_TABLE")
    result = CliRunner().invoke(cli, ["rollback", "--cluster", "c1", "--to", str(saved), "--yes",
                                      "--stack", "no-such-stack"])
    assert result.exit_code == 1
    assert result.stderr.startswith("error: DescribeStacks no-such-stack")
    assert gpus(emu) == {**BEFORE, "a": 2}  # neither touched a quota

    result = run("rollback", "--cluster", "c1", "--to", str(saved), "--yes")
    assert result.exit_code == 0, result.output
    assert gpus(emu) == BEFORE


def test_apply_asks_first(emu: Emulator, aws: AwsClients, kube: str, policy: str) -> None:
    setup_cluster(emu, aws.client("sagemaker"))
    result = run("apply", "--cluster", "c1", "--kube-url", kube, "--policy", policy, input="n\n")
    assert result.exit_code == 1
    assert "Aborted" in result.output
    assert gpus(emu) == BEFORE


def test_apply_failure_is_reported_and_rolled_back(emu: Emulator, aws: AwsClients, kube: str,
                                                   policy: str) -> None:
    setup_cluster(emu, aws.client("sagemaker"))
    emu.inject("update-failed", "UpdateComputeQuota", skip=1)
    result = run("apply", "--cluster", "c1", "--kube-url", kube, "--policy", policy, "--yes")
    assert result.exit_code == 1
    assert "rollback: restored the state before the apply" in result.stdout
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("error: quota ")
    assert "ended in UpdateFailed" in last
    assert last.endswith("; rolled back")
    emu.settle()
    assert gpus(emu) == BEFORE


def test_aws_error_is_one_line_without_traceback(emu: Emulator) -> None:
    result = CliRunner().invoke(cli, ["snapshot", "--cluster", "nope", "--no-kube"])
    assert result.exit_code == 1
    assert result.stderr.startswith("error: DescribeCluster on cluster nope: ")
    assert len(result.stderr.strip().splitlines()) == 1
    assert "Traceback" not in result.output


def test_bad_input_to_a_writer_is_refused_before_it_says_what_it_would_do(emu: Emulator, aws: AwsClients,
                                                                          policy: str, tmp_path: Path) -> None:
    """Without the table, apply and rollback say they run unrecorded and unlocked once their input is checked,
    never before the error that refuses it; snapshot --context-output reads its policy before the cluster."""
    setup_cluster(emu, aws.client("sagemaker"))
    bad = tmp_path / "snap.json"
    bad.write_text('{"taken_at": "yesterday"}')
    for args in (("apply", "--cluster", "nope", "--no-kube", "--policy", policy, "--yes"),
                 ("rollback", "--cluster", "c1", "--to", str(bad), "--yes"),
                 ("rollback", "--cluster", "nope", "--to", str(bad), "--yes"),
                 ("snapshot", "--cluster", "c1", "--no-kube", "-o", str(tmp_path / "s.json"), "--context-output",
                  str(tmp_path / "c.json"), "--policy", str(bad))):
        result = CliRunner().invoke(cli, list(args))
        assert result.exit_code in (1, 2), result.output
        assert result.stderr.startswith("error: "), (args, result.stderr)
        assert "warning" not in result.stderr
        assert not (tmp_path / "s.json").exists()  # nothing written on a refused input
    # and a run that writes says it, before it asks
    result = run("apply", "--cluster", "c1", "--no-kube", "--policy", policy, input="n\n")
    assert "warning: no audit table" in result.stderr
    assert "without the controller's per-cluster lock" in result.stderr


def test_debug_shows_the_exception(emu: Emulator) -> None:
    result = CliRunner().invoke(cli, ["--debug", "snapshot", "--cluster", "nope", "--no-kube"])
    assert result.exit_code == 1
    assert result.exception is not None


def test_rollback_refuses_a_snapshot_of_another_cluster(emu: Emulator, aws: AwsClients, tmp_path: Path) -> None:
    setup_cluster(emu, aws.client("sagemaker"))
    snap = run("snapshot", "--cluster", "c1", "--no-kube").stdout
    other = json.loads(snap)
    other["cluster"]["ClusterArn"] += "-elsewhere"
    path = tmp_path / "other.json"
    path.write_text(json.dumps(other))
    result = run("rollback", "--cluster", "c1", "--to", str(path), "--yes")
    assert result.exit_code == 2
    assert "cluster.ClusterArn: the snapshot is of" in result.stderr


def test_kube_options_exclude_each_other(emu: Emulator) -> None:
    result = run("snapshot", "--cluster", "c1", "--no-kube", "--kube-context", "x")
    assert result.exit_code == 2
    assert "choose one of --kube-context, --no-kube" in result.stderr


def test_snapshot_reads_mig_capacity_and_survives_a_forbidden_node_list(emu: Emulator, aws: AwsClients) -> None:
    setup_cluster(emu, aws.client("sagemaker"))
    state = KubeState()
    state.add(node("p5-0", P5, {"nvidia.com/mig-1g.10gb": 7}))
    with serve(state) as (url, _):
        ok = run("snapshot", "--cluster", "c1", "--kube-url", url, "--metrics-window", "0")
        state.errors["nodes"] = 403
        forbidden = run("snapshot", "--cluster", "c1", "--kube-url", url, "--metrics-window", "0")
    assert Snapshot.model_validate_json(ok.stdout).mig == {P5: {"mig-1g.10gb": 7}}
    assert forbidden.exit_code == 0
    assert Snapshot.model_validate_json(forbidden.stdout).mig == {}
    assert "warning: nodes not read (MIG capacity, HyperPod health labels): Kubernetes list nodes: 403 Forbidden" \
        in forbidden.stderr


def test_rollback_leaves_an_edit_made_while_it_asked(emu: Emulator, aws: AwsClients, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    arn, _ = setup_cluster(emu, aws.client("sagemaker"))
    saved = tmp_path / "before.json"
    saved.write_text(run("snapshot", "--cluster", "c1", "--no-kube").stdout)
    emu.external_edit("a-quota", {"ComputeQuotaConfig": config(2)})
    emu.external_edit("b-quota", {"ComputeQuotaConfig": config(2)})

    def admin_edits_while_we_ask(*args: object, **kwargs: object) -> bool:
        emu.external_edit("a-quota", {"ComputeQuotaConfig": config(1)})
        return True

    monkeypatch.setattr("click.confirm", admin_edits_while_we_ask)
    result = run("rollback", "--cluster", "c1", "--to", str(saved))
    assert result.exit_code == 1
    assert gpus(emu) == {**BEFORE, "a": 1}  # b restored; a keeps the edit nobody here saw
    assert "conflict" in result.stdout
    assert violations(emu, arn) == []


def test_plan_on_the_cluster_equals_plan_on_its_snapshot(emu: Emulator, aws: AwsClients, kube: str, policy: str,
                                                         tmp_path: Path) -> None:
    setup_cluster(emu, aws.client("sagemaker"))
    saved = tmp_path / "snap.json"
    assert run("snapshot", "--cluster", "c1", "--kube-url", kube, "-o", str(saved)).exit_code == 0
    live = json.loads(run("plan", "--cluster", "c1", "--kube-url", kube, "--policy", policy,
                          "--format", "json").stdout)
    offline = json.loads(run("plan", "--snapshot", str(saved), "--policy", policy, "--format", "json").stdout)
    assert live == offline
    assert live["requests"]


def test_apply_given_the_audit_table_shows_in_history_and_leaves_no_console_edit(
        emu: Emulator, aws: AwsClients, kube: str, policy: str) -> None:
    setup_cluster(emu, aws.client("sagemaker"))
    table = create_table(aws.client("dynamodb"), "rebalancer-table")
    result = run("apply", "--cluster", "c1", "--kube-url", kube, "--policy", policy, "--yes", "--table", table)
    assert result.exit_code == 0, result.output
    after = gpus(emu)
    moved = {t for t in BEFORE if after[t] != BEFORE[t]}
    assert moved

    history = run("history", "--cluster", "c1", "--table", table, "--json")
    assert history.exit_code == 0, history.output
    records = [json.loads(line) for line in history.stdout.splitlines()]
    # The records of one controller run: its plan, then its apply.
    assert [(r["kind"], r["outcome"]) for r in records] == [("plan", "apply"), ("apply", "applied")]
    applied = records[1]
    assert {t: v[P5] for t, v in applied["before"].items() if t in moved} == {t: BEFORE[t] for t in moved}
    assert {t: v[P5] for t, v in applied["after"].items() if t in moved} == {t: after[t] for t in moved}
    assert {r["detail"]["source"] for r in records} == {"cli"}
    assert applied["who"].startswith("arn:aws:")

    # The controller's next run: the versions our writes left are its own, so none of them is a console edit.
    store = Store(table, resource=aws.session.resource("dynamodb"))
    recorded = store.versions.known("c1")
    snap = Snapshot.model_validate_json(run("snapshot", "--cluster", "c1", "--kube-url", kube,
                                            "--metrics-window", "0").stdout)
    assert moved <= set(recorded)
    assert {q.team: q.ComputeQuotaVersion for q in snap.quotas if q.team in recorded} == recorded
    edited = Policy.model_validate(yaml.safe_load(POLICY.replace("weight: 1", "weight: 1, preempt_team_tasks: Never")))
    known = known_versions_for(recorded, snap, edited)
    plan = make_plan(snap, edited, snap.taken_at, context=planning_context(snap, edited, known_versions=known))
    assert {f.team for f in plan.field_changes} >= moved  # rewrites a setting of each team
    assert plan.console_edits == ()
    unrecorded = make_plan(snap, edited, snap.taken_at,
                           context=planning_context(snap, edited, known_versions={}))
    assert unrecorded.console_edits  # without the recorded versions the same plan sees console edits


def test_apply_with_a_missing_audit_table_stops_before_writing(emu: Emulator, aws: AwsClients, kube: str,
                                                               policy: str) -> None:
    setup_cluster(emu, aws.client("sagemaker"))
    result = CliRunner().invoke(cli, ["apply", "--cluster", "c1", "--kube-url", kube, "--policy", policy, "--yes",
                                      "--table", "no-such-table"])
    assert result.exit_code == 1
    assert result.stderr.startswith("error: DescribeTable on audit table no-such-table: ResourceNotFoundException")
    assert len(result.stderr.strip().splitlines()) == 1
    assert gpus(emu) == BEFORE


def test_apply_failure_given_the_audit_table_is_recorded_with_its_rollback(emu: Emulator, aws: AwsClients, kube: str,
                                                                        policy: str) -> None:
    setup_cluster(emu, aws.client("sagemaker"))
    table = create_table(aws.client("dynamodb"), "rebalancer-table")
    emu.inject("update-failed", "UpdateComputeQuota", skip=1)
    result = run("apply", "--cluster", "c1", "--kube-url", kube, "--policy", policy, "--yes", "--table", table)
    assert result.exit_code == 1
    emu.settle()
    assert gpus(emu) == BEFORE
    records = [json.loads(line) for line in
               run("history", "--cluster", "c1", "--table", table, "--json").stdout.splitlines()]
    # As the controller's run: the failed apply, then the rollback of what it wrote.
    assert [(r["kind"], r["outcome"]) for r in records] == [("plan", "apply"), ("apply", "failed"),
                                                              ("rollback", "restored")]
    # The rollback's writes are ours too: their versions are recorded, not taken later for console edits.
    store = Store(table, resource=aws.session.resource("dynamodb"))
    recorded = store.versions.known("c1")
    current = {q.team: q.ComputeQuotaVersion for q in
               Snapshot.model_validate_json(run("snapshot", "--cluster", "c1", "--no-kube").stdout).quotas}
    assert recorded
    assert {t: current[t] for t in recorded} == recorded


def test_rollback_refuses_a_snapshot_of_another_cluster_given_this_cluster_s_arn(
        emu: Emulator, aws: AwsClients, tmp_path: Path) -> None:
    arn1, _ = setup_cluster(emu, aws.client("sagemaker"))
    setup_cluster(emu, aws.client("sagemaker"), name="c2")
    other = json.loads(run("snapshot", "--cluster", "c2", "--no-kube").stdout)
    other["cluster"]["ClusterArn"] = arn1
    for q in other["quotas"]:
        q["ComputeQuotaConfig"] = config(2)
        q.pop("ClusterArn", None)
    path = tmp_path / "other.json"
    path.write_text(json.dumps(other))
    before = emu.quotas()
    result = run("rollback", "--cluster", "c1", "--to", str(path), "--yes")
    assert result.exit_code == 2
    assert "quotas: 5 quota(s) of the snapshot are not quotas of this cluster now" in result.stderr
    assert emu.quotas() == before  # neither c1's nor c2's quotas were written


def test_a_restore_above_healthy_capacity_restores_what_fits_and_says_what_it_left(
        emu: Emulator, aws: AwsClients, tmp_path: Path) -> None:
    arn, _ = setup_cluster(emu, aws.client("sagemaker"))
    table = create_table(aws.session.resource("dynamodb"))
    snap = json.loads(run("snapshot", "--cluster", "c1", "--no-kube").stdout)
    for q in snap["quotas"]:  # a 10 → 14, b 8 → 6, c 6 → 8: 36 of 32 healthy GPUs
        team = q["ComputeQuotaTarget"]["TeamName"]
        q["ComputeQuotaConfig"] = config({"a": 14, "b": 6, "c": 8}.get(team, BEFORE[team]))
    path = tmp_path / "edited.json"
    path.write_text(json.dumps(snap))

    result = run("rollback", "--cluster", "c1", "--to", str(path), "--table", table, "--yes")
    assert result.exit_code == 1, result.output
    assert (f"warning: above healthy capacity: {P5}: the restored quotas would hold 36, the cluster has 32 healthy; "
            "a quota whose restore would raise it is left as it is") in result.stderr
    # b's decrease first (30), then a's raise would hold 34: left; c's holds 32: restored.
    assert gpus(emu) == {**BEFORE, "b": 6, "c": 8}
    [left] = [line for line in result.stdout.splitlines() if line.startswith("refused")]
    assert f"left as it is: {P5}: the enabled quotas would hold 34, the cluster has 32 healthy" in left
    assert "restored in part: what is listed above as refused, conflict or failed was left as it is" in result.stderr
    assert raised(emu, arn) == []
    history = run("history", "--cluster", "c1", "--table", table)
    assert history.exit_code == 0, history.output
    assert "a p5.48xlarge left at 10" in history.stdout
    assert "b p5.48xlarge 8→6" in history.stdout


def test_rollback_preview_lists_only_the_quotas_that_change(emu: Emulator, aws: AwsClients, tmp_path: Path) -> None:
    setup_cluster(emu, aws.client("sagemaker"))
    saved = tmp_path / "before.json"
    saved.write_text(run("snapshot", "--cluster", "c1", "--no-kube").stdout)
    emu.external_edit("b-quota", {"ComputeQuotaConfig": config(2)})
    result = run("rollback", "--cluster", "c1", "--to", str(saved), "--yes")
    assert result.exit_code == 0, result.output
    preview = [line for line in result.stdout.splitlines() if re.match(r"[a-z]+: .* → ", line)]
    assert len(preview) == 1, result.stdout
    assert preview[0].startswith("b: ")
    assert "(4 quota(s) already as in the snapshot)" in result.stdout
    assert gpus(emu) == BEFORE

    again = run("rollback", "--cluster", "c1", "--to", str(saved), "--yes")
    assert again.exit_code == 0
    assert "nothing to restore" in again.stdout


def test_apply_checks_the_plan_again_after_the_prompt_and_never_writes_above_capacity(
        emu: Emulator, aws: AwsClients, kube: str, policy: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A node fails while the plan waits at the prompt: the plan is made again on the 24 GPUs left, stays within
    what was said yes to (a and b cut as shown, d and e raised less), and is written without asking again."""
    arn, _ = setup_cluster(emu, aws.client("sagemaker"))
    asked: list[str] = []

    def answer_while_a_node_fails(text: str, **_: object) -> bool:
        asked.append(text)
        emu.fail_node("c1", "p5-0")
        return True

    monkeypatch.setattr("click.confirm", answer_while_a_node_fails)
    result = run("apply", "--cluster", "c1", "--kube-url", kube, "--policy", policy)
    assert result.exit_code == 0, result.output
    assert asked == ["Apply 5 request(s) to c1?"]
    assert "The approved plan was made again before writing, and stays within the approval:" in result.stdout
    assert f"changed since the plan: the healthy capacity of {P5} fell from 32 to 24" in result.stdout
    assert gpus(emu) == {"a": 4, "b": 4, "c": 6, "d": 5, "e": 5}  # shown on 32: 4, 4, 8, 8, 8
    assert raised(emu, arn) == []


def test_apply_asks_again_when_the_plan_made_again_goes_beyond_what_was_shown(
        emu: Emulator, aws: AwsClients, kube: str, policy: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Someone cuts a's quota in the console while the plan waits at the prompt: the plan made again moves other
    amounts than the one shown, so it is shown and asked about again; saying no writes nothing."""
    setup_cluster(emu, aws.client("sagemaker"))
    asked: list[str] = []

    def answer(text: str, **_: object) -> bool:
        asked.append(text)
        if len(asked) == 1:
            emu.external_edit("c-quota", {"ComputeQuotaConfig": config(2)})
            return True
        raise click.exceptions.Abort

    monkeypatch.setattr("click.confirm", answer)
    table = create_table(aws.client("dynamodb"), "rebalancer-table")
    result = run("apply", "--cluster", "c1", "--kube-url", kube, "--policy", policy, "--table", table)
    assert result.exit_code == 1, result.output
    assert len(asked) == 2
    assert f"beyond the approval: c {P5} accelerators 2→8: larger than the approved 6→8" in result.stdout
    assert gpus(emu) == {**BEFORE, "c": 2}
    # the history ends with the no, not at the recheck: declined, nothing written
    records = [json.loads(line) for line in
               run("history", "--cluster", "c1", "--table", table, "--json").stdout.splitlines()]
    assert [(r["kind"], r["outcome"]) for r in records] == [("plan", "apply"), ("plan", "superseded"),
                                                              ("recheck", "superseded"), ("apply", "declined")]
    assert records[-1]["detail"] == {"source": "cli", "why": "declined at the prompt", "written": 0}


def test_a_node_failing_while_the_cuts_settle_leaves_the_raises_that_no_longer_fit_and_says_so(
        emu: Emulator, aws: AwsClients, kube: str, policy: str) -> None:
    """Planned and checked on 32 GPUs; a and b are cut (32 → 22) and a node fails while the CLI waits for the cuts
    to settle. The raises are checked against the 24 read after that wait: c's fits, d's does not; the apply stops
    there, exits 1, names the write it left and why, and the history records it."""
    arn, _ = setup_cluster(emu, aws.client("sagemaker"))
    table = create_table(aws.client("dynamodb"), "rebalancer-table")
    emu.inject("node-failure", "DescribeComputeQuota", cluster="c1", node="p5-0")
    result = run("apply", "--cluster", "c1", "--kube-url", kube, "--policy", policy, "--yes", "--table", table)
    assert result.exit_code == 1, result.output
    refusal = (f"{P5}: the enabled quotas would hold 28, the cluster has 24 healthy (it had 32 when this pass of "
               "writes began)")
    assert [line for line in result.stdout.splitlines() if line.startswith("refused       UpdateComputeQuota d (")
            and line.endswith(f"): {refusal}")]
    assert result.stderr.strip().splitlines()[-1].startswith(f"error: UpdateComputeQuota for team d refused: {refusal}")
    assert raised(emu, arn) == []
    records = [json.loads(line) for line in
               run("history", "--cluster", "c1", "--table", table, "--json").stdout.splitlines()]
    assert [(r["kind"], r["outcome"]) for r in records] == [("plan", "apply"), ("apply", "failed"),
                                                              ("rollback", "incomplete")]
    assert records[1]["detail"]["left"] == {"d": refusal, "e": "not-attempted"}
    # Undoing the cuts would raise the pool above the 24 left: the rollback leaves them and says so.
    assert sorted(records[2]["detail"]["left"]) == ["a", "b"]
    assert gpus(emu) == {"a": 4, "b": 4, "c": 6, "d": 4, "e": 4}
