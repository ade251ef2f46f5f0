"""The event loop: controller in the loop with an apply delay, node failures, determinism."""

from __future__ import annotations

import pytest

from rebalancer_tools.simulator.engine import ControllerView, Decision, Failures, NodeEvent, SimConfig, Simulation
from rebalancer_tools.simulator.kueue import QueueSpec
from rebalancer_tools.simulator.run import Scenario, run_strategy
from rebalancer_tools.simulator.teams import TeamSpec
from rebalancer_tools.simulator.trace import HORIZON_S, TraceJob


def test_quota_change_takes_effect_after_the_apply_delay() -> None:
    seen: list[ControllerView] = []

    def controller(view: ControllerView) -> Decision | None:
        seen.append(view)
        return Decision({"a": {"gpu": 8}, "b": {"gpu": 0}}) if view.pending["a"]["gpu"] else None

    queues = [QueueSpec("a", 0, borrow_limit_percent=50), QueueSpec("b", 8, borrow_limit_percent=50)]
    jobs = [TraceJob("j", "a", 0, 100, 4)]
    cfg = SimConfig(nodes=1, gpus_per_node=8, fair_share=True, controller_interval_s=900, apply_delay_s=120)
    raw = Simulation(jobs, ["a", "b"], queues, [0, 1], cfg, controller).run()
    assert seen[0].pending == {"a": {"gpu": 4}, "b": {"gpu": 0}}
    assert seen[0].quotas == {"a": {"gpu": 0}, "b": {"gpu": 8}}
    assert seen[0].healthy_nodes == {"gpu": 1}
    assert raw.job_wait_s == [120.0]  # team a (nominal 0) cannot borrow until its quota is applied
    assert raw.quota_changes == [1, 1]


def test_node_failure_kills_jobs_that_no_longer_fit_and_they_rerun() -> None:
    queues = [QueueSpec("a", 16)]
    jobs = [TraceJob("j1", "a", 0, 1000, 8), TraceJob("j2", "a", 0, 1000, 8)]
    failures = Failures(explicit=(NodeEvent(100, 0, "fail"), NodeEvent(300, 0, "repair")))
    cfg = SimConfig(nodes=2, gpus_per_node=8, failures=failures)
    raw = Simulation(jobs, ["a"], queues, [0], cfg).run()
    assert raw.failure_kills == [1]
    assert raw.failure_lost_gpu_s == [100 * 8]
    assert sorted(raw.job_wait_s) == [0.0, 200.0]
    assert raw.end_s == 1300


def _scenario(seed: int) -> Scenario:
    jobs = [TraceJob(f"j{i}", f"t{i % 3}", i * 600.0, 3600.0 * (1 + i % 5), [1, 2, 4, 8][i % 4]) for i in range(120)]
    teams = [TeamSpec("t0", 1, 8), TeamSpec("t1", 1, 8), TeamSpec("t2", 2, 16)]
    return Scenario(jobs=jobs, teams=teams, nodes=4, failures=Failures(mtbf_hours=24, repair_hours=2), seed=seed)


def test_same_seed_same_result() -> None:
    a = run_strategy(_scenario(7), "builtin").output()
    b = run_strategy(_scenario(7), "builtin").output()
    assert a == b
    assert a["failure_kills"] > 0  # the seed matters: failures happened
    c = run_strategy(_scenario(8), "builtin").output()
    assert c != a


def test_a_plan_needing_approval_waits_for_it_and_no_other_plan_runs_meanwhile() -> None:
    calls: list[float] = []

    def controller(view: ControllerView) -> Decision | None:
        calls.append(view.now_s)
        return Decision({"a": {"gpu": 8}, "b": {"gpu": 0}}, needs_approval=True) if view.quotas["a"]["gpu"] == 0 \
            else None

    queues = [QueueSpec("a", 0, borrow_limit_percent=50), QueueSpec("b", 8, borrow_limit_percent=50)]
    jobs = [TraceJob("j", "a", 0, 7200, 4)]
    cfg = SimConfig(nodes=1, gpus_per_node=8, controller_interval_s=900, apply_delay_s=120, approval_delay_s=1800)
    raw = Simulation(jobs, ["a", "b"], queues, [0, 1], cfg, controller).run()
    assert raw.job_wait_s == [1920.0]
    assert calls[:3] == [0.0, 2700.0, 3600.0]  # the ticks at 900 and 1800 s fall while the approval is pending


def test_a_plan_that_gives_notice_is_written_that_much_later_after_its_approval() -> None:
    """b borrows a's idle quota; a plan that hands it back to a preempts b's job, so it gives b an hour's notice."""
    written: list[float] = []

    def controller(view: ControllerView) -> Decision | None:
        if view.quotas["a"]["gpu"] == 8:
            written.append(view.now_s)
            return None
        return Decision({"a": {"gpu": 8}, "b": {"gpu": 0}}, needs_approval=True, notice_s=3600) \
            if view.pending["a"]["gpu"] else None

    queues = [QueueSpec("a", 0, borrow_limit_percent=50), QueueSpec("b", 8, borrow_limit_percent=50)]
    jobs = [TraceJob("b1", "b", 0, 20000, 8), TraceJob("a1", "a", 100, 600, 8)]
    cfg = SimConfig(nodes=1, gpus_per_node=8, controller_interval_s=900, apply_delay_s=120, approval_delay_s=1800)
    raw = Simulation(jobs, ["a", "b"], queues, [0, 1], cfg, controller).run()
    # decided at 900 s: approved 1,800 s later, written 3,600 s after that (+ the 120 s apply), then a reclaims
    assert raw.job_wait_s[1] == 900 + 120 + 1800 + 3600 - 100
    assert written[0] == 900 + 5400 + 900  # the next plan after the write; none ran while it waited
    assert raw.preemptions == [0, 1]


def test_a_run_ends_when_a_node_fails_for_good_and_a_job_no_longer_fits() -> None:
    queues = [QueueSpec("a", 16)]
    jobs = [TraceJob("big", "a", 0, 1000, 16), TraceJob("small", "a", 10, 100, 8)]
    cfg = SimConfig(nodes=2, gpus_per_node=8, failures=Failures(explicit=(NodeEvent(100, 0, "fail"),)))
    raw = Simulation(jobs, ["a"], queues, [0], cfg).run()  # before: sampled on forever, waiting for a repair
    assert raw.job_done == [False, True]
    assert raw.failure_kills == [1]
    assert raw.end_s == 200


def test_a_repair_far_ahead_is_one_step_not_one_controller_run_per_interval() -> None:
    """A job waits for a node repaired at the run's horizon: the controller is asked a handful of times while the run
    waits, not once every 15 minutes for eleven years (before: the run never ended in useful time)."""
    calls: list[float] = []

    def controller(view: ControllerView) -> Decision | None:
        calls.append(view.now_s)
        return None

    queues = [QueueSpec("a", 16)]
    jobs = [TraceJob("big", "a", 0, 1000, 16)]
    failures = Failures(explicit=(NodeEvent(5, 0, "fail"), NodeEvent(HORIZON_S, 0, "repair")))
    cfg = SimConfig(nodes=2, gpus_per_node=8, controller_interval_s=900, failures=failures)
    raw = Simulation(jobs, ["a"], queues, [0], cfg, controller).run()
    assert raw.job_done == [True]
    assert raw.end_s == HORIZON_S + 1000
    assert raw.job_wait_s == [HORIZON_S - 5]  # killed by the failure at 5 s, requeued
    assert len(calls) <= 12  # 8 idle runs, the one at the repair, the ones until the job ends
    assert len(raw.timeline.times_s) <= 4  # samples too: none while nothing can change


def test_waiting_for_a_repair_keeps_the_periodic_events_on_their_grid() -> None:
    calls: list[float] = []

    def controller(view: ControllerView) -> Decision | None:
        calls.append(view.now_s)
        return None

    failures = Failures(explicit=(NodeEvent(5, 0, "fail"), NodeEvent(100 * 900 + 1, 0, "repair")))
    cfg = SimConfig(nodes=2, gpus_per_node=8, controller_interval_s=900, failures=failures)
    Simulation([TraceJob("big", "a", 0, 1000, 16)], ["a"], [QueueSpec("a", 16)], [0], cfg, controller).run()
    assert all(t % 900 == 0 for t in calls)
    assert 101 * 900 in calls  # the first run after the repair, on the controller's interval


def test_a_node_event_beyond_the_horizon_is_refused() -> None:
    cfg = SimConfig(nodes=1, gpus_per_node=8, failures=Failures(explicit=(NodeEvent(1e15, 0, "repair"),)))
    with pytest.raises(ValueError, match="outside the run's"):
        Simulation([TraceJob("j", "a", 0, 10, 1)], ["a"], [QueueSpec("a", 8)], [0], cfg).run()
