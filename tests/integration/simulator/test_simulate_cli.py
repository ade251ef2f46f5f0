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
    # The sample's teams get closer to their entitlement with the rebalancer than with the built-in sharing alone.
    assert s["rebalancer"]["entitlement_deficit_gpu_hours"] < s["builtin"]["entitlement_deficit_gpu_hours"]


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
    p5 = "ml.p5.48xlarge"
    view = ControllerView(now_s=7200, healthy_nodes={p5: 15}, failed_nodes={p5: 1},
                          quotas={t: {p5: n} for t, n in quotas.items()},
                          quota_versions=dict.fromkeys(quotas, 3), quota_modified_s=dict.fromkeys(quotas, 0.0),
                          in_use={busy: {p5: quotas[busy]}}, pending={busy: {p5: 64}})
    snap = ctl.snapshot(view)
    assert snap.healthy_nodes()["ml.p5.48xlarge"] == 15
    assert snap.unhealthy_nodes()["ml.p5.48xlarge"] == 1
    assert snap.quota_of(busy) is not None
    assert snap.quota_of(busy).ComputeQuotaVersion == 3  # type: ignore[union-attr]
    assert snap.demand_of(busy, "ml.p5.48xlarge").total("accelerators") == quotas[busy] + 64
    decision = ctl(view)
    assert decision is not None
    new = {t: q[p5] for t, q in decision.quotas.items()}
    assert new[busy] > quotas[busy]
    assert new.get(idle, quotas[idle]) < quotas[idle]
    assert sum({**quotas, **new}.values()) <= 120  # within healthy capacity


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


LABELLED = ("job_id,team,submit_s,duration_s,gpus\n" + "".join(
    f"j{i},{label},{i * 600},{3600 * (1 + i % 3)},{(1, 2, 4, 8)[i % 4]}\n"
    for i, label in enumerate(["app_0", "App 0", "app-0", "Vision Team", "ml"] * 12)))


def test_a_trace_with_any_team_labels_simulates_and_the_mapping_is_reported(tmp_path: Path) -> None:
    trace = tmp_path / "labels.csv"
    trace.write_text(LABELLED)
    base = ["simulate", "--trace", str(trace), "--gpus", "32", "--no-progress", "--controller-interval-minutes", "60"]
    table = CliRunner().invoke(cli, base)
    assert table.exit_code == 0, table.output
    for text in ("App 0", "app-0-2", "vision-team"):
        assert text in table.stdout
    data = json.loads(CliRunner().invoke(cli, [*base, "--format", "json"]).stdout)
    assert data["team_labels"] == {"App 0": "app-0-2", "Vision Team": "vision-team", "app-0": "app-0",
                                   "app_0": "app-0-3", "ml": "ml"}
    assert set(data["strategies"]["rebalancer"]["teams"]) == {"app-0", "app-0-2", "app-0-3", "vision-team", "ml"}
    assert data["strategies"]["rebalancer"]["jobs_completed"] == 60
    got = CliRunner().invoke(cli, [*base, "--strategies", "builtin", "--report", str(tmp_path / "r")])
    assert got.exit_code == 0, got.output
    assert "| `App 0` | `app-0-2` |" in (tmp_path / "r" / "report.md").read_text()


def test_a_mixed_gpu_and_trainium_cluster_from_the_trace_command(tmp_path: Path) -> None:
    trace = tmp_path / "mixed.csv"
    got = CliRunner().invoke(cli, ["trace", "--teams", "4", "--pool", "ml.p5.48xlarge=4", "--pool",
                                   "ml.trn1.32xlarge=2", "--days", "2", "--load", "1.2", "--seed", "3",
                                   "-o", str(trace)])
    assert got.exit_code == 0, got.output
    lines = trace.read_text().splitlines()
    assert lines[0] == "job_id,team,submit_s,duration_s,gpus,instance_type"
    assert {line.rsplit(",", 1)[1] for line in lines[1:]} == {"ml.p5.48xlarge", "ml.trn1.32xlarge"}
    result = CliRunner().invoke(cli, ["simulate", "--trace", str(trace), "--pool", "ml.p5.48xlarge=4", "--pool",
                                      "ml.trn1.32xlarge=2", "--format", "json", "--no-progress",
                                      "--controller-interval-minutes", "60"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["capacity_gpus"] == 64
    assert data["pools"] == {"ml.p5.48xlarge": {"nodes": 4, "accelerators": 32},
                             "ml.trn1.32xlarge": {"nodes": 2, "accelerators": 32}}
    for r in data["strategies"].values():
        pools = r["pools"]
        assert set(pools) == {"ml.p5.48xlarge", "ml.trn1.32xlarge"}
        assert sum(p["jobs_completed"] for p in pools.values()) == r["jobs_completed"]
    table = CliRunner().invoke(cli, ["simulate", "--trace", str(trace), "--pool", "ml.p5.48xlarge=4", "--pool",
                                     "ml.trn1.32xlarge=2", "--strategies", "static", "--no-progress"])
    assert "pool ml.trn1.32xlarge: 32 accelerators" in table.stdout


def test_pool_flags_are_checked(tmp_path: Path) -> None:
    for args, needle in ((["--pool", "ml.p5.48xlarge=4", "--gpus", "64"], "either as --pool"),
                         (["--pool", "ml.p5.48xlarge"], "--pool: must be TYPE=NODES"),
                         (["--pool", "ml.c5.large=2"], "has no accelerators"),
                         (["--pool", "ml.nope.x=2"], "--pool")):
        result = CliRunner().invoke(cli, ["simulate", "--trace", str(SAMPLE), *args])
        assert result.exit_code == 2, (args, result.output)
        assert needle in result.stderr


def test_node_events_number_the_nodes_across_the_pools(tmp_path: Path) -> None:
    trace = tmp_path / "t.csv"
    trace.write_text("job_id,team,submit_s,duration_s,gpus,instance_type\n"
                     "g,a,0,7200,8,ml.p5.48xlarge\nt,a,0,7200,16,trainium\nlate,a,10800,60,1,\n")
    events = tmp_path / "nodes.csv"
    args = ["simulate", "--trace", str(trace), "--pool", "ml.p5.48xlarge=2", "--pool", "ml.trn1.32xlarge=1",
            "--node-events", str(events), "--strategies", "builtin", "--format", "json", "--no-progress"]
    events.write_text("time_s,node,event\n3600,2,fail\n")  # node 2: the trn1 node, after p5's 0 and 1
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    pools = json.loads(result.stdout)["strategies"]["builtin"]["pools"]
    assert pools["ml.trn1.32xlarge"]["failure_kills"] == 1
    assert pools["ml.p5.48xlarge"]["failure_kills"] == 0
    events.write_text("time_s,node,event\n3600,3,fail\n")
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 2
    assert "node: must be a node number from 0 to 2, got '3'" in result.stderr


def test_a_node_event_at_an_absurd_time_is_one_line(tmp_path: Path) -> None:
    events = tmp_path / "nodes.csv"
    events.write_text("time_s,node,event\n3600,1,fail\n1e15,1,repair\n")
    code, _, err = run("--node-events", str(events))
    assert code == 2
    assert f"{events}:3: time_s: must be a number of seconds from 0 to 346896000" in err
    assert err.count("\n") == 1
