"""What checking a plan before its write costs, at 1,000 teams x 15 types (plan_bench.synthetic): CPU time of
recording a plan's basis (planning.basis.basis_of, in every Plan step) and of the recheck's comparisons
(planning.staleness) beside make_plan itself, as ratios measured in the same run with the absolute figures; and
the SageMaker calls the quota writer's capacity guard adds to an apply that raises a quota (ListComputeQuotas and
ListClusterNodes, 100 a page, before the first write; the nodes again before a raising write that follows a wait),
beside what reading the nodes before every raising write would cost. A recheck after an approval is one more
Collect and one more plan: those are collect_bench's and plan_bench's figures.

    PYTHONPATH=layers/core:tools python benchmarks/recheck_bench.py
"""

from __future__ import annotations

import math
import statistics
import sys
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import plan_bench as bench

from rebalancer.adapters.sagemaker.quota_writer import raises_any
from rebalancer.domain.plan import QuotaRequest
from rebalancer.domain.quotas import ComputeQuota
from rebalancer.planning.basis import basis_of
from rebalancer.planning.context import planning_context
from rebalancer.planning.planner import make_plan
from rebalancer.planning.staleness import beyond_approval, stale_reasons

TEAMS = 1000
PAGE = 100


def main() -> None:
    global TEAMS
    if sys.argv[1:] == ["--smoke"]:  # once, small (the test suite runs it so)
        TEAMS, bench.RUNS = 10, 1
    snap, policy = bench.synthetic(TEAMS, bench.instance_types())
    context = planning_context(snap, policy)
    plan = make_plan(snap, policy, bench.NOW, context=context)
    basis = basis_of(snap, policy, context)
    pairs = []
    for _ in range(bench.RUNS):
        planned = bench.cpu_ms(lambda: make_plan(snap, policy, bench.NOW, context=context), runs=1)[0]
        based = bench.cpu_ms(lambda: basis_of(snap, policy, context), runs=1)[0]
        compared = bench.cpu_ms(lambda: (stale_reasons(basis, basis, plan, bench.NOW, timedelta(hours=1)),
                                         beyond_approval(plan, plan)), runs=1)[0]
        pairs.append((planned, based, compared))
    plan_ms = statistics.median(p for p, _, _ in pairs)
    basis_ms = statistics.median(b for _, b, _ in pairs)
    compare_ms = statistics.median(c for _, _, c in pairs)
    print(f"{TEAMS} teams x {len(bench.instance_types())} types, {len(plan.changes)} changes, "
          f"{len(snap.nodes)} nodes (median of {bench.RUNS}, CPU ms)")
    print(f"  make_plan           {plan_ms:8.1f} ms")
    print(f"  basis_of            {basis_ms:8.1f} ms  ({statistics.median(b / p for p, b, _ in pairs):.2f} x "
          "make_plan)")
    print(f"  staleness checks    {compare_ms:8.1f} ms  ({statistics.median(c / p for p, _, c in pairs):.2f} x "
          "make_plan)")
    quota_pages, node_pages = math.ceil(len(snap.quotas) / PAGE), math.ceil(len(snap.nodes) / PAGE)
    again = readings_after_a_wait(snap.quotas, plan.requests)
    print(f"  capacity guard: {quota_pages + node_pages} SageMaker calls before the first write "
          f"({quota_pages} ListComputeQuotas + {node_pages} ListClusterNodes pages), then the nodes again after "
          f"each wait before a raising write: {again} x {node_pages} pages for this plan's "
          f"{len(plan.requests)} requests, {quota_pages + node_pages * (1 + again)} calls in all; once before each "
          f"raising write it would be {quota_pages + node_pages * (1 + raising(snap.quotas, plan.requests))}")


def _steps(quotas: Sequence[ComputeQuota], requests: Sequence[QuotaRequest]) -> list[bool]:
    """Whether each request raises a quota, as the quota writer tells (rebalancer.adapters.sagemaker)."""
    current = {q.ComputeQuotaId: q for q in quotas}
    out = []
    for r in requests:
        qid = r.parameters.get("ComputeQuotaId")
        was = current.get(qid) if isinstance(qid, str) else None
        after = was.updated(r.parameters) if was is not None else None
        out.append(after is None or raises_any(was, after))
        if was is not None and after is not None:
            current[was.ComputeQuotaId] = after
    return out


def readings_after_a_wait(quotas: Sequence[ComputeQuota], requests: Sequence[QuotaRequest]) -> int:
    """How many times the writer reads the nodes again: at each raising request after decreases it waited for
    (a burst of writes takes less than Poller.capacity_fresh)."""
    readings, lowered = 0, False
    for increases in _steps(quotas, requests):
        if increases and lowered:
            readings, lowered = readings + 1, False
        lowered |= not increases
    return readings


def raising(quotas: Sequence[ComputeQuota], requests: Sequence[QuotaRequest]) -> int:
    return sum(_steps(quotas, requests))


if __name__ == "__main__":
    main()
