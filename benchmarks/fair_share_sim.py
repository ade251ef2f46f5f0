"""The runs behind docs/simulation.md "Fair share over a window": every `make bench-sim` scenario with the
rebalancer's default policy plus `fairness.window_hours`, the goal table's checks against builtin and pooled.

    PYTHONPATH=layers/core:tools .venv/bin/python benchmarks/fair_share_sim.py LABEL WINDOW_HOURS [STRENGTH] \
        [--trace ../shared/traces/philly-vc/jobs.csv] [--only philly-512,synthetic-mixed]

WINDOW_HOURS 0: off (the default policy). STRENGTH (default 1): the exponent's factor in
rebalancer.planning.fair_share (an experiment: the shipped planner reads its constant). builtin's and pooled's runs
do not depend on the policy: they are cached in /tmp/fair_share_sim.pkl; the rebalancer's results go to
/tmp/fair_share_sim-LABEL.pkl. Runs go to a pool of 2 processes.
"""

from __future__ import annotations

import argparse
import dataclasses
import pickle
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from rebalancer_tools.simulator import StrategyResult, bench, run_strategy
from rebalancer_tools.simulator.run import effective_policy

sys.path.insert(0, str(Path(__file__).resolve().parent))
from smoke import tiny_scenario

CACHE = Path("/tmp/fair_share_sim.pkl")


def one(key: str, strategy: str, trace: str, window: float, strength: float) -> tuple[str, str, StrategyResult]:
    from rebalancer.planning import fair_share

    fair_share.STRENGTH = strength
    sc = tiny_scenario() if key == "smoke" else bench.scenario(key, trace)
    if strategy == "rebalancer" and window:
        policy = effective_policy(sc)
        fairness = policy.fairness.model_copy(update={"window_hours": window})
        sc = dataclasses.replace(sc, policy=policy.model_copy(update={"fairness": fairness}))
    return key, strategy, dataclasses.replace(run_strategy(sc, strategy), timeline=None)


def smoke() -> None:
    """The three strategies on a tiny scenario, in this process, nothing cached."""
    results = {s: one("smoke", s, "", 168.0, 1.0)[2] for s in ("builtin", "pooled", "rebalancer")}
    print("smoke: " + "; ".join(f"{g.head}: {g.check(results)[0]}" for g in bench.GOALS))


def main() -> None:
    if sys.argv[1:] == ["--smoke"]:  # SMOKE_HELP
        smoke()
        return
    ap = argparse.ArgumentParser()
    ap.add_argument("label")
    ap.add_argument("window", type=float)
    ap.add_argument("strength", type=float, nargs="?", default=1.0)
    ap.add_argument("--trace", default="../shared/traces/philly-vc/jobs.csv")
    ap.add_argument("--only", default=",".join(s.key for s in bench.SCENARIOS))
    args = ap.parse_args()
    keys = args.only.split(",")
    base: dict[tuple[str, str], StrategyResult] = pickle.loads(CACHE.read_bytes()) if CACHE.exists() else {}
    tasks = [(k, s) for k in keys for s in ("builtin", "pooled") if (k, s) not in base]
    tasks += [(k, "rebalancer") for k in keys]
    mine: dict[str, StrategyResult] = {}
    with ProcessPoolExecutor(2) as pool:
        for future in [pool.submit(one, k, s, args.trace, args.window, args.strength) for k, s in tasks]:
            key, strategy, result = future.result()
            if strategy == "rebalancer":
                mine[key] = result
            else:
                base[(key, strategy)] = result
    CACHE.write_bytes(pickle.dumps(base))
    Path(f"/tmp/fair_share_sim-{args.label}.pkl").write_bytes(pickle.dumps(mine))
    met = 0
    for key in keys:
        results = {"rebalancer": mine[key], "builtin": base[(key, "builtin")], "pooled": base[(key, "pooled")]}
        cells = []
        for goal in bench.GOALS:
            text, ok = goal.check(results)
            met += ok
            cells.append(text if ok else f"{text} ✗")
        print(f"| {args.label} | {key} | " + " | ".join(cells) + " |")
    print(f"{args.label}: {met} of {len(keys) * len(bench.GOALS)} goals met")


if __name__ == "__main__":
    main()
