"""Kueue behaviour the simulator must reproduce, including two cases restated from Kueue's own scheduler tests."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from rebalancer_tools.simulator.engine import SimConfig, Simulation
from rebalancer_tools.simulator.kueue import QueueSpec
from rebalancer_tools.simulator.results import RawResult
from rebalancer_tools.simulator.trace import TraceJob


def job(job_id: str, team: str, submit: float, duration: float, gpus: int, priority: int = 0) -> TraceJob:
    return TraceJob(job_id, team, submit, duration, gpus, priority)


def simulate(jobs: Sequence[TraceJob], queues: Sequence[QueueSpec], capacity: int, *, fair: bool = True,
             checkpoint_s: float = 0.0) -> tuple[RawResult, dict[str, int]]:
    teams = [q.name for q in queues]
    cfg = SimConfig(nodes=capacity, gpus_per_node=1, share_unallocated=False, fair_share=fair,
                    checkpoint_s=checkpoint_s)
    raw = Simulation(jobs, teams, queues, list(range(len(teams))), cfg).run()
    return raw, {j.job_id: i for i, j in enumerate(jobs)}


def test_fair_sharing_admits_the_queue_that_would_borrow_less() -> None:
    # Kueue: b and c (nominal 0) borrow from lender a (100). b runs 10; b1 = 50 → b holds 60 < c's 75 with c1.
    queues = [QueueSpec("a", 100), QueueSpec("b", 0), QueueSpec("c", 0)]
    jobs = [job("b0", "b", 0, 100, 10), job("c1", "c", 1, 10, 75), job("b1", "b", 1, 100, 50)]
    raw, ix = simulate(jobs, queues, 100)
    assert raw.job_wait_s[ix["b1"]] == 0
    assert raw.job_wait_s[ix["c1"]] == 100  # pending until b1 completes at t=101
    assert all(raw.job_done)


def test_without_fair_sharing_the_earlier_job_goes_first() -> None:
    queues = [QueueSpec("a", 100), QueueSpec("b", 0), QueueSpec("c", 0)]
    jobs = [job("b0", "b", 0, 100, 10), job("c1", "c", 1, 10, 75), job("b1", "b", 1, 100, 50)]
    raw, ix = simulate(jobs, queues, 100, fair=False)
    assert raw.job_wait_s[ix["c1"]] == 0
    assert raw.job_wait_s[ix["b1"]] > 0


def _c1_c2(preempt_within: bool = False) -> list[QueueSpec]:
    return [QueueSpec("c1", 6, borrow_limit=6, preempt_within=preempt_within, reclaim_lower_priority_only=True),
            QueueSpec("c2", 6, borrow_limit=6, preempt_within=preempt_within, reclaim_lower_priority_only=True)]


def test_quota_owner_reclaims_what_it_lent() -> None:
    # c2 runs 3 CPU at priority 0 and 6 at priority 1 (borrowing 3); a priority-1 job of 3 arrives at c1.
    jobs = [job("low", "c1", 0, 1000, 3, -1), job("c2-p0", "c2", 0, 1000, 3, 0), job("c2-p1", "c2", 0, 1000, 6, 1),
            job("new", "c1", 10, 100, 3, 1)]
    raw, ix = simulate(jobs, _c1_c2(), 12)
    assert raw.job_wait_s[ix["new"]] == 0
    assert raw.preemptions == [0, 1]  # c2's priority-0 job, not c1's own priority −1 job
    assert raw.lost_gpu_s[1] == pytest.approx(10 * 3)
    assert raw.job_wait_s[ix["c2-p0"]] == pytest.approx(100)  # requeued; borrows again when "new" ends at 110


def test_nothing_is_preempted_when_nobody_borrows() -> None:
    jobs = [job("low", "c1", 0, 1000, 3, -1), job("mid", "c1", 0, 1000, 3, 0), job("c2-p0", "c2", 0, 1000, 3, 0),
            job("c2-p1", "c2", 0, 1000, 3, 1), job("new", "c1", 10, 100, 3, 1)]
    raw, ix = simulate(jobs, _c1_c2(), 12)
    assert raw.preemptions == [0, 0]
    assert raw.job_wait_s[ix["new"]] == pytest.approx(990)


def test_lower_priority_within_the_team() -> None:
    jobs = [job("low", "c1", 0, 1000, 3, -1), job("mid", "c1", 0, 1000, 3, 0), job("c2-p0", "c2", 0, 1000, 3, 0),
            job("c2-p1", "c2", 0, 1000, 3, 1), job("new", "c1", 10, 100, 3, 1)]
    raw, ix = simulate(jobs, _c1_c2(preempt_within=True), 12)
    assert raw.preemptions == [1, 0]
    assert raw.job_wait_s[ix["new"]] == 0
    assert raw.job_wait_s[ix["low"]] > 0


def test_gang_job_gets_all_its_gpus_or_none() -> None:
    queues = [QueueSpec("a", 8, lend=False, borrow=False)]
    jobs = [job("one", "a", 0, 100, 4), job("big", "a", 1, 100, 8), job("small", "a", 2, 100, 4)]
    raw, ix = simulate(jobs, queues, 8)
    assert raw.job_wait_s[ix["small"]] == 0  # backfills the 4 free GPUs (BestEffortFIFO)
    assert raw.job_wait_s[ix["big"]] == 101  # never partly started: waits until both 4-GPU jobs are done


def test_static_quotas_do_not_lend() -> None:
    queues = [QueueSpec("a", 4, lend=False, borrow=False), QueueSpec("b", 4, lend=False, borrow=False)]
    jobs = [job("a1", "a", 0, 100, 4), job("a2", "a", 0, 100, 4)]
    raw, ix = simulate(jobs, queues, 8)
    assert raw.job_wait_s[ix["a2"]] == 100  # b's 4 GPUs stay idle


def test_borrow_limit_is_a_percent_of_nominal() -> None:
    queues = [QueueSpec("a", 4, borrow_limit_percent=50), QueueSpec("b", 4, borrow_limit_percent=50)]
    jobs = [job("a1", "a", 0, 100, 4), job("a2", "a", 0, 100, 2), job("a3", "a", 0, 100, 1)]
    raw, ix = simulate(jobs, queues, 8)
    assert raw.job_wait_s[ix["a2"]] == 0  # 6 ≤ 4 + 50 %
    assert raw.job_wait_s[ix["a3"]] == 100  # 7 > 6 although b's GPUs are idle


def test_checkpoint_keeps_work_done_before_the_last_checkpoint() -> None:
    jobs = [job("borrower", "c2", 0, 1000, 9), job("owner", "c1", 250, 10, 6)]
    queues = [QueueSpec("c1", 6), QueueSpec("c2", 6)]
    raw, _ = simulate(jobs, queues, 12, checkpoint_s=100)
    assert raw.preemptions == [0, 1]
    assert raw.lost_gpu_s[1] == pytest.approx(50 * 9)  # ran 250 s, checkpointed at 200
    # requeued at 250 with 800 s of work left; restarts when the owner finishes at 260
    assert raw.end_s == pytest.approx(260 + 800)
