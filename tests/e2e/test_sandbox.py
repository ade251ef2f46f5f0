"""The sandbox, as a new user drives it: `rebalancer emulator --seed-demo` serves it, and with only the environment
it prints, every command works on it as on AWS: snapshot and plan read Kueue demand through the EKS endpoint,
apply records itself in the audit table, history shows run ids that --snapshot-of takes, export and backtest replay
the history, usage reads the meter, doctor says "sandbox" where a check cannot apply, and the drive commands change
what the next plan sees."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from support.sandbox_cli import rebalancer

from rebalancer_tools.emulator.demo_cluster import DEMO, P5
from rebalancer_tools.local.sandbox import Sandbox

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
POLICY = str(ROOT / "examples" / "demo-policy.yaml")
CLUSTER = DEMO.cluster_name


def test_the_printed_environment_names_the_sandbox(sandbox: Sandbox) -> None:
    env = sandbox.environment()
    assert env["AWS_ENDPOINT_URL"] == sandbox.endpoint
    assert env["REBALANCER_TABLE"] == sandbox.table


def test_policy_init_writes_the_policy_the_cluster_is_in_sync_with(sandbox: Sandbox, tmp_path: Path) -> None:
    written = tmp_path / "policy.yaml"
    code, out = rebalancer("policy", "init", "--cluster", CLUSTER, "-o", str(written))
    assert code == 0, out
    code, out = rebalancer("diff", "--cluster", CLUSTER, "--policy", str(written))
    assert code == 0, out
    assert out.strip() == f"{CLUSTER}: in sync with {written}"
    code, out = rebalancer("policy", "init", "--cluster", CLUSTER, "-o", str(written))
    assert code == 2
    assert "exists already" in out


def test_every_command_works_on_the_sandbox(sandbox: Sandbox, tmp_path: Path) -> None:
    code, out = rebalancer("snapshot", "--cluster", CLUSTER, "-o", str(tmp_path / "snap.json"))
    assert code == 0, out
    snap = json.loads((tmp_path / "snap.json").read_text())
    assert snap["demand"]["research"][P5]["in_use"]["accelerators"] == 8  # Kueue read through the EKS endpoint
    assert len(snap["nodes"]) == sum(g.count for g in DEMO.groups)

    code, out = rebalancer("plan", "--cluster", CLUSTER, "--policy", POLICY)
    assert code == 0, out
    # the quotas were just written: the policy wants research and training at what they run, the cooldown holds
    assert "no change needed" not in out
    assert "nothing changes now: 2 changes held back (cooldown until" in " ".join(out.split())
    code, out = rebalancer("plan", "--cluster", CLUSTER, "--policy", POLICY, "--format", "json")
    held = json.loads(out[out.index("{"):])["held"]
    assert [(c["team"], c["before"], c["wanted"], c["hold"]["rule"]) for c in held] == [
        ("research", 12, 8, "cooldown"), ("training", 12, 8, "cooldown")]

    code, out = rebalancer("emulator", "fail-node", "--group", "gpu-p5")
    assert code == 0, out
    failed = re.search(r"node (\S+) failed", out)
    assert failed, out
    code, out = rebalancer("emulator", "add-demand", "--team", "research", "--instance-type", P5,
                           "--accelerators", "8", "--pods", "2", "--runs-for", "6h")
    assert code == 0, out
    assert out.rstrip().endswith(", declaring 6h")
    code, out = rebalancer("plan", "--cluster", CLUSTER, "--policy", POLICY, "--format", "json")
    assert code == 0, out
    plan = json.loads(out[out.index("{"):])
    assert plan["changes"], out  # a node less and research queueing: the quotas no longer fit

    code, out = rebalancer("apply", "--cluster", CLUSTER, "--policy", POLICY, "--yes")
    assert code == 0, out
    assert "every quota settled" in out

    code, out = rebalancer("why", "--cluster", CLUSTER, "--team", "research", "--format", "json")
    assert code == 0, out
    why = json.loads(out)
    [raised] = [c for c in plan["changes"] if c["team"] == "research" and c["instance_type"] == P5]
    [line] = [q for q in why["quotas"] if q["pool"] == P5]
    assert (line["last_change"]["after"], line["last_change"]["reason"]) == (raised["after"], raised["reason"])
    assert [w["accelerators"] for w in why["waiting"] if w["name"]] == [16]  # the workload add-demand queued
    code, out = rebalancer("why", "--cluster", CLUSTER, "--team", "research", "--live", "--policy", POLICY)
    assert code == 0, out
    assert re.search(rf"^workload research-job-\d+ on {P5}: 16 accelerators in 2 pods.*, declared run 6 h$", out,
                     re.M), out
    assert f"last changed {raised['before']:g}→{raised['after']:g}" in out  # the table's history, a live snapshot

    code, out = rebalancer("history", "--cluster", CLUSTER)
    assert code == 0, out
    [run_id] = re.findall(r"│ (cli\d{8}T\d{6}) ", out)
    code, out = rebalancer("history", "--cluster", CLUSTER, "--snapshot-of", run_id[:8], "-o",
                           str(tmp_path / "before.json"))
    assert code == 0, out
    assert json.loads((tmp_path / "before.json").read_text())["cluster"]["ClusterName"] == CLUSTER

    code, out = rebalancer("history", "export", "--cluster", CLUSTER, "--since", "1d", "-o",
                           str(tmp_path / "history.jsonl"))
    assert code == 0, out
    assert "1 runs" in out
    code, out = rebalancer("backtest", "--history", str(tmp_path / "history.jsonl"), "--policy", POLICY)
    assert code == 0, out

    code, out = rebalancer("doctor", "--cluster", CLUSTER)
    assert code == 0, out
    assert "FAIL" not in out
    assert re.search(r"^OK +add-on amazon-sagemaker-hyperpod-taskgovernance: ACTIVE", out, re.M), out
    assert re.search(r"^OK +EKS access entry", out, re.M), out
    assert re.search(r"^SANDBOX function permissions: the sandbox deploys no CloudFormation stack", out, re.M), out

    code, out = rebalancer("emulator", "heal-node", "--node", failed.group(1))
    assert code == 0, out
    code, out = rebalancer("emulator", "resize", "--group", "gpu-p5", "--count", "5")
    assert code == 0, out
    capacity = sandbox.emulator.healthy_capacity(CLUSTER)
    assert capacity[(P5, "Accelerators")] == 40


def test_the_drive_commands_refuse_in_one_line(sandbox: Sandbox) -> None:
    code, out = rebalancer("emulator", "add-demand", "--team", "nobody", "--instance-type", P5,
                           "--accelerators", "8")
    assert code == 2
    assert out.startswith("error: add-demand: no team 'nobody' in the sandbox (teams: ")
    code, out = rebalancer("emulator", "add-demand", "--team", "reserch", "--instance-type", P5,
                           "--accelerators", "8")
    assert (code, out.strip().splitlines()[-1]) == (2, "error: add-demand: no team 'reserch' in the sandbox (did you "
                                                        "mean research? teams: data-science, inference, platform, "
                                                        "research, training)")
    code, out = rebalancer("emulator", "add-demand", "--team", "research", "--instance-type", P5,
                           "--accelerators", "8", "--runs-for", "1 day")
    assert code == 2
    assert "--runs-for" in out
    assert "'1 day' is not a Go duration above 0 (such as 6h, 90m or 1h30m)" in out
    code, out = rebalancer("emulator", "add-demand", "--team", "training", "--instance-type", P5,
                           "--accelerators", "8", "--name", "once")
    assert (code, out.strip()) == (0, f"workload once pending for training: 1 × 8 on {P5}")
    jobs = list(sandbox.jobs["training"])
    code, out = rebalancer("emulator", "add-demand", "--team", "training", "--instance-type", P5,
                           "--accelerators", "4", "--name", "once")  # one name, one workload in a team
    assert (code, out.strip()) == (2, "error: add-demand: team 'training' has a workload named 'once' already: give "
                                      "another --name")
    assert sandbox.jobs["training"] == jobs  # nothing added
    code, out = rebalancer("emulator", "fail-node", "--group", "no-such-group")
    assert code == 2
    assert out.strip() == "error: fail-node: no running node in instance group 'no-such-group'"
    code, out = rebalancer("emulator", "run")  # this one was opened without a policy: no controller
    assert code == 2
    assert out.strip() == "error: run: this sandbox runs no controller: start it with `rebalancer emulator --seed-demo`"


def test_the_banner_prints_every_variable_to_export(sandbox: Sandbox, capsys: pytest.CaptureFixture[str]) -> None:
    from rebalancer_tools.cli.sandbox_cmds import _announce

    _announce(sandbox)
    out = capsys.readouterr().out
    for name, value in sandbox.environment().items():
        assert f"  export {name}={value}\n" in out
    assert f"rebalancer snapshot --cluster {CLUSTER}" in out
