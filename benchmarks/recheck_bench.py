"""What checking a plan before its write costs, at 1,000 teams x 15 types (plan_bench.synthetic): CPU time of
recording a plan's basis (planning.basis.basis_of, in every Plan step) and of the recheck's comparisons
(planning.staleness) beside make_plan itself, as ratios measured in the same run with the absolute figures; and
the SageMaker calls the quota writer's capacity guard adds to an apply that raises a quota (ListComputeQuotas and
ListClusterNodes, 100 a page). A recheck after an approval is one more Collect and one more plan: those are
collect_bench's and plan_bench's figures.

    PYTHONPATH=layers/core:tools python benchmarks/recheck_bench.py
"""

from __future__ import annotations

import math
import statistics
import sys
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import plan_bench as bench

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
    calls = math.ceil(len(snap.quotas) / PAGE) + math.ceil(len(snap.nodes) / PAGE)
    print(f"  capacity guard: {calls} SageMaker calls before the first raising write "
          f"({math.ceil(len(snap.quotas) / PAGE)} ListComputeQuotas + {math.ceil(len(snap.nodes) / PAGE)} "
          "ListClusterNodes pages)")


if __name__ == "__main__":
    main()
