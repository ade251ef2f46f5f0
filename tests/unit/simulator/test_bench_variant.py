"""`simulator.bench --gang-steps --window-hours H`: the fairness fields reach the policy the rebalancer's controller
plans with, on top of the scenario's default policy, and nothing else of that policy changes."""

from __future__ import annotations

import dataclasses

import pytest

from rebalancer.domain.policy import Policy
from rebalancer_tools.simulator import bench
from rebalancer_tools.simulator.controller import PlannerController
from rebalancer_tools.simulator.metrics import StrategyResult
from rebalancer_tools.simulator.run import controller_for, effective_policy

KEY = "synthetic-overload"  # generated: no trace file needed
BASE = StrategyResult(name="x", utilization=0.9, wait_p50_s=0, wait_p95_s=100, wait_mean_s=0, preemptions=0,
                      lost_gpu_hours=10, entitlement_deficit_gpu_hours=1000, jain_index=0.8, quota_changes=0,
                      jobs_completed=1, jobs_unfinished=0, failure_kills=0, failure_lost_gpu_hours=0, makespan_s=1)


def policy_run_with(argv: list[str]) -> Policy:
    _, variant = bench.options(argv)
    controller = controller_for(bench.scenario(KEY, "unused.csv", variant))
    assert isinstance(controller, PlannerController)
    return controller.policy


def test_the_window_and_the_gang_steps_reach_the_rebalancers_policy() -> None:
    default = effective_policy(bench.scenario(KEY, "unused.csv"))
    got = policy_run_with(["--gang-steps", "--window-hours", "24"])
    assert got.fairness.window_hours == 24.0
    assert got.fairness.gang_steps
    assert default.fairness.window_hours is None
    assert not default.fairness.gang_steps
    assert got.model_copy(update={"fairness": default.fairness}) == default


def test_the_window_alone_leaves_gang_steps_off() -> None:
    got = policy_run_with(["--window-hours", "168"])
    assert got.fairness.window_hours == 168.0
    assert not got.fairness.gang_steps


def test_without_either_flag_the_bench_runs_its_own_scenario() -> None:
    _, variant = bench.options([])
    assert bench.scenario(KEY, "unused.csv", variant) is bench.scenario(KEY, "unused.csv")
    assert not variant.updates()


@pytest.mark.parametrize("value", ["0", "-1", "abc", "nan", "2209"])
def test_a_window_outside_the_policys_bounds_is_one_clear_line(value: str,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        bench.options(["--window-hours", value])
    assert exit_.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.endswith(f"argument --window-hours: fairness.window_hours must be a number of hours in (0, 2208], "
                        f"not {value!r}")



def test_the_printed_block_names_the_fields_laid_over_the_policy() -> None:
    scenarios = [s for s in bench.SCENARIOS if s.key == KEY]
    results = {KEY: dict.fromkeys(bench.STRATEGIES, BASE)}
    timings = dict.fromkeys(((KEY, n) for n in bench.STRATEGIES), 1.0)
    plain = bench.block(scenarios, "unused.csv", results, timings, 1.0, 2)
    both = bench.block(scenarios, "unused.csv", results, timings, 1.0, 2,
                       bench.Variant(gang_steps=True, window_hours=24.0))
    assert "the default policy; " in plain
    assert "the default policy, fairness.gang_steps: True, fairness.window_hours: 24.0; " in both


def test_quota_weights_give_each_team_its_hand_set_share_as_policy_init_does() -> None:
    """The teams' own weights: the rebalancer's policy, builtin's fair share and the entitlement all read them."""
    plain = bench.scenario(KEY, "unused.csv")
    _, variant = bench.options(["--quota-weights"])
    sc = bench.scenario(KEY, "unused.csv", variant)
    first = sc.instance_types[0]
    held = {t.name: t.quota_in(first, first) for t in sc.teams}
    assert {t.weight for t in plain.teams} == {1.0}
    weights = {t.name: t.weight for t in sc.teams}
    assert len(set(weights.values())) > 1
    some = next(n for n in held if held[n])
    for name, n in held.items():  # in proportion to the hand-set quotas (whole numbers: divided by their gcd)
        if n:
            assert weights[name] / weights[some] == pytest.approx(n / held[some])
    policy = policy_run_with(["--quota-weights"])
    assert {n: t.weight for n, t in policy.teams.items()} == weights
    assert [dataclasses.replace(t, weight=1.0) for t in sc.teams] == list(plain.teams)
