"""The runs behind docs/simulation.md "Fair share over a window" and "The window's reach": every `make bench-sim`
scenario with the rebalancer's default policy plus `fairness.window_hours`, the goal table's checks against builtin
and pooled.

    PYTHONPATH=layers/core:tools .venv/bin/python benchmarks/fair_share_sim.py LABEL WINDOW_HOURS [STRENGTH] \
        [--gang-steps] [--form kai --k 2] [--trace ../shared/traces/philly-vc/jobs.csv] \
        [--only philly-512,synthetic-mixed]

WINDOW_HOURS 0: off (the default policy). STRENGTH (default 1): the exponent's factor in
rebalancer.planning.fair_share (an experiment: the shipped planner reads its constant). `--gang-steps`,
`--form`, `--k`: `fairness.gang_steps`, `fairness.window_form` and `fairness.window_k` laid over the policy too.
builtin's and pooled's runs do not depend on the policy: they are cached in DIR/fair_share_sim.pkl (`--dir`,
default /tmp); the rebalancer's results go to DIR/fair_share_sim-LABEL.pkl. Runs go to a pool of 2 processes.
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


def one(key: str, strategy: str, trace: str, window: float, strength: float,
        fields: dict[str, object]) -> tuple[str, str, StrategyResult]:
    from rebalancer.planning import fair_share

    fair_share.STRENGTH = strength
    sc = tiny_scenario() if key == "smoke" else bench.scenario(key, trace)
    if strategy == "rebalancer" and (window or fields):
        policy = effective_policy(sc)
        fairness = policy.fairness.model_copy(update={**({"window_hours": window} if window else {}), **fields})
        sc = dataclasses.replace(sc, policy=policy.model_copy(update={"fairness": fairness}))
    return key, strategy, dataclasses.replace(run_strategy(sc, strategy), timeline=None)


def smoke() -> None:
    """The three strategies on a tiny scenario, in this process, nothing cached."""
    results = {s: one("smoke", s, "", 168.0, 1.0, {})[2] for s in ("builtin", "pooled", "rebalancer")}
    print("smoke: " + "; ".join(f"{g.head}: {g.check(results)[0]}" for g in bench.GOALS))


def main() -> None:
    if sys.argv[1:] == ["--smoke"]:  # once, small (the test suite runs it so)
        smoke()
        return
    ap = argparse.ArgumentParser()
    ap.add_argument("label")
    ap.add_argument("window", type=float)
    ap.add_argument("strength", type=float, nargs="?", default=1.0)
    ap.add_argument("--trace", default="../shared/traces/philly-vc/jobs.csv")
    ap.add_argument("--only", default=",".join(s.key for s in bench.SCENARIOS))
    ap.add_argument("--dir", default="/tmp", help="Where the pickled results go.")
    ap.add_argument("--gang-steps", action="store_true")
    ap.add_argument("--form", choices=["exponential", "kai"], default="exponential")
    ap.add_argument("--k", type=float, default=1.0)
    args = ap.parse_args()
    fields: dict[str, object] = {"window_form": args.form, "window_k": args.k} if args.form == "kai" else {}
    if args.gang_steps:
        fields["gang_steps"] = True
    keys = args.only.split(",")
    cache = Path(args.dir) / "fair_share_sim.pkl"
    base: dict[tuple[str, str], StrategyResult] = pickle.loads(cache.read_bytes()) if cache.exists() else {}
    tasks = [(k, s) for k in keys for s in ("builtin", "pooled") if (k, s) not in base]
    tasks += [(k, "rebalancer") for k in keys]
    mine: dict[str, StrategyResult] = {}
    with ProcessPoolExecutor(2) as pool:
        for future in [pool.submit(one, k, s, args.trace, args.window, args.strength, fields) for k, s in tasks]:
            key, strategy, result = future.result()
            if strategy == "rebalancer":
                mine[key] = result
            else:
                base[(key, strategy)] = result
    cache.write_bytes(pickle.dumps(base))
    (Path(args.dir) / f"fair_share_sim-{args.label}.pkl").write_bytes(pickle.dumps(mine))
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
