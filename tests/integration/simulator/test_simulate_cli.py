"""`rebalancer simulate` end to end on the shipped sample trace, with the production planner in the loop."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from rebalancer.cli import cli
from rebalancer.simulator import Scenario, default_teams, load_trace, run_strategy
from rebalancer.simulator.controller import PlannerController, default_policy
from rebalancer.simulator.engine import ControllerView

ROOT = Path(__file__).resolve().parents[3]
SAMPLE = ROOT / "examples" / "traces" / "philly-sample.csv"


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["simulate", "--trace", str(SAMPLE), "--gpus", "128",
                                      "--controller-interval-minutes", "60", *args])
    return result.exit_code, result.stdout, result.stderr


def test_json_output_for_every_strategy() -> None:
    code, out, _ = run("--format", "json", "--no-progress")
    assert code == 0
    data = json.loads(out)
    assert data["capacity_gpus"] == 128
    assert list(data["strategies"]) == ["static", "builtin", "rebalancer", "pooled"]
    for r in data["strategies"].values():
        assert {"utilization", "wait_p50_s", "wait_p95_s", "wait_mean_s", "preemptions", "lost_gpu_hours",
                "entitlement_deficit_gpu_hours", "jain_index", "quota_changes", "jobs_completed"} <= set(r)
        assert 0 < r["utilization"] <= 1
    s = data["strategies"]
    assert s["static"]["quota_changes"] == s["builtin"]["quota_changes"] == 0
    assert s["rebalancer"]["quota_changes"] > 0  # the planner moved quota
    assert s["static"]["preemptions"] == 0  # nothing lent, nothing reclaimed


def test_malformed_row_exits_2_naming_the_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text("job_id,team,submit_s,duration_s,gpus\na,t,0,100,8\nb,t,0,100,eight\n")
    result = CliRunner().invoke(cli, ["simulate", "--trace", str(bad)])
    assert result.exit_code == 2
    assert f"error: {bad}:3: gpus: must be a number, got 'eight'" in result.stderr


def test_report_writes_markdown_and_plots(tmp_path: Path) -> None:
    code, _, _ = run("--strategies", "builtin,rebalancer", "--report", str(tmp_path), "--no-progress")
    assert code == 0
    md = (tmp_path / "report.md").read_text()
    assert "| rebalancer |" in md
    assert "![utilization.png](utilization.png)" in md
    for png in ("utilization.png", "rebalancer-teams.png"):
        assert (tmp_path / png).read_bytes()[:4] == b"\x89PNG"


def test_controller_snapshot_is_what_collect_would_read_and_plan_moves_quota_to_demand() -> None:
    jobs = load_trace(SAMPLE)
    teams = default_teams(jobs, 128, 8)
    ctl = PlannerController(default_policy(teams, "ml.p5.48xlarge", 0.5), teams, "ml.p5.48xlarge", nodes=16)
    quotas = {t.name: t.quota for t in teams}
    busy = max(teams, key=lambda t: t.quota).name
    idle = next(t.name for t in teams if t.name != busy and t.quota >= 8)
    view = ControllerView(now_s=7200, healthy_nodes=15, failed_nodes=1, quotas=quotas,
                          quota_versions=dict.fromkeys(quotas, 3), quota_modified_s=dict.fromkeys(quotas, 0.0),
                          in_use={busy: quotas[busy]}, pending={busy: 64})
    snap = ctl.snapshot(view)
    assert snap.healthy_nodes()["ml.p5.48xlarge"] == 15
    assert snap.unhealthy_nodes()["ml.p5.48xlarge"] == 1
    assert snap.quota_of(busy) is not None
    assert snap.quota_of(busy).ComputeQuotaVersion == 3  # type: ignore[union-attr]
    assert snap.demand_of(busy, "ml.p5.48xlarge").total("accelerators") == quotas[busy] + 64
    new = ctl(view)
    assert new is not None
    assert new[busy] > quotas[busy]
    assert new.get(idle, quotas[idle]) < quotas[idle]
    assert sum({**quotas, **new}.values()) <= 120  # within healthy capacity


def test_rebalancer_reduces_entitlement_deficit_on_the_sample() -> None:
    jobs = load_trace(SAMPLE)
    sc = Scenario(jobs=jobs, teams=default_teams(jobs, 128, 8), nodes=16, controller_interval_s=3600)
    builtin = run_strategy(sc, "builtin")
    rebalancer = run_strategy(sc, "rebalancer")
    assert rebalancer.entitlement_deficit_gpu_hours < builtin.entitlement_deficit_gpu_hours
