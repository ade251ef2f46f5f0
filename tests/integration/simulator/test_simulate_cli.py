"""`rebalancer simulate` end to end on the shipped sample trace, with the production planner in the loop."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from rebalancer_tools.cli import cli
from rebalancer_tools.simulator import (
    Failures,
    NodeEvent,
    Scenario,
    StrategyResult,
    default_teams,
    load_trace,
    run_strategy,
)
from rebalancer_tools.simulator.controller import PlannerController, default_policy
from rebalancer_tools.simulator.engine import ControllerView

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
    code, _, _ = run("--strategies", "rebalancer", "--report", str(tmp_path), "--no-progress")
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
    decision = ctl(view)
    assert decision is not None
    new = decision.quotas
    assert new[busy] > quotas[busy]
    assert new.get(idle, quotas[idle]) < quotas[idle]
    assert sum({**quotas, **new}.values()) <= 120  # within healthy capacity


def test_rebalancer_reduces_entitlement_deficit_on_the_sample() -> None:
    jobs = load_trace(SAMPLE)
    sc = Scenario(jobs=jobs, teams=default_teams(jobs, 128, 8), nodes=16, controller_interval_s=3600)
    builtin = run_strategy(sc, "builtin")
    rebalancer = run_strategy(sc, "rebalancer")
    assert rebalancer.entitlement_deficit_gpu_hours < builtin.entitlement_deficit_gpu_hours


def _quota_sums_after(result: StrategyResult, t_s: float) -> list[tuple[int, int]]:
    tl = result.timeline
    assert tl is not None
    return [(sum(tl.quota[team][i] for team in tl.quota), tl.capacity[i])
            for i, t in enumerate(tl.times_s) if t >= t_s]


def test_controller_shrinks_quotas_to_the_healthy_capacity_after_node_failures() -> None:
    jobs = load_trace(SAMPLE)
    down = tuple(NodeEvent(5 * 86400.0, n, "fail") for n in range(4))
    up = tuple(NodeEvent(10 * 86400.0, n, "repair") for n in range(4))
    sc = Scenario(jobs=jobs, teams=default_teams(jobs, 128, 8), nodes=16, controller_interval_s=3600,
                  failures=Failures(explicit=down + up))
    builtin = run_strategy(sc, "builtin")
    rebalancer = run_strategy(sc, "rebalancer")
    during = [s for s in _quota_sums_after(rebalancer, 5 * 86400 + 2 * 3600) if s[1] == 96]
    assert during
    assert all(total <= capacity for total, capacity in during)
    assert all(total > capacity for total, capacity in _quota_sums_after(builtin, 5 * 86400) if capacity == 96)
    assert builtin.failure_kills > 0


def test_node_events_file_errors_name_the_line(tmp_path: Path) -> None:
    events = tmp_path / "nodes.csv"
    events.write_text("time_s,node,event\n3600,1,fail\n7200,99,repair\n")
    code, _, err = run("--node-events", str(events))
    assert code == 2
    assert f"{events}:3: node: must be a node number from 0 to 15, got '99'" in err


def test_same_seed_same_result_with_the_planner_in_the_loop() -> None:
    jobs = load_trace(SAMPLE)[:100]
    sc = Scenario(jobs=jobs, teams=default_teams(jobs, 64, 8), nodes=8, controller_interval_s=7200,
                  failures=Failures(mtbf_hours=200, repair_hours=6), seed=3)
    first = run_strategy(sc, "rebalancer").output()
    assert first == run_strategy(sc, "rebalancer").output()
    assert first["quota_changes"] > 0
