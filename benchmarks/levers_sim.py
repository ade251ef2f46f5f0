"""The runs behind docs/simulation.md "Levers": one scenario × strategy with policy overrides, one JSON line out.

    PYTHONPATH=layers/core:tools .venv/bin/python benchmarks/levers_sim.py p1024f rebalancer LABEL \
        '{"seed": 2, "set": {"fairness.age_doubling_hours": 24}}'

Scenarios: p512, p1024f (MTBF 720 h), p1024 (the Philly trace), synth, synthf (MTBF 720 h): the synthetic trace
that `rebalancer trace --teams 8 --gpus 256 --load 1.3 --days 30 --seed 7` writes, generated here in memory.
`levers_sim.py --smoke` runs a tiny scenario once (the test suite does).
Options: `set` (policy fields by dotted path, `teams*.` for every team), `seed`, `interval_s`, `repair_hours` (mean
node repair time under MTBF, default 4), `gfrac` (guarantee fraction of the default policy), `window_ticks`
(experiment: demand seen as its peak over the last k runs).
"""

from __future__ import annotations

import collections
import dataclasses
import json
import sys
import time
from pathlib import Path
from typing import Any

from rebalancer.domain.policy import Policy
from rebalancer_tools.simulator import Failures, Scenario, default_teams, load_trace, run_strategy, synthetic
from rebalancer_tools.simulator.controller import default_policy
from rebalancer_tools.simulator.engine import ControllerView, Decision
from rebalancer_tools.simulator.run import controller_for

sys.path.insert(0, str(Path(__file__).resolve().parent))
from smoke import tiny_scenario

PHILLY = "../shared/traces/philly-vc/jobs.csv"
SYNTH = "synthetic: 8 teams, 256 GPUs, load 1.3, 30 days, seed 7"
SCENARIOS: dict[str, tuple[str, int, float | None]] = {
    "p512": (PHILLY, 512, None), "p1024f": (PHILLY, 1024, 720.0), "p1024": (PHILLY, 1024, None),
    "synth": (SYNTH, 256, None), "synthf": (SYNTH, 256, 720.0)}


def policy_with(teams: list[Any], opts: dict[str, Any]) -> Policy:
    doc = default_policy(teams, "ml.p5.48xlarge", opts.get("gfrac", 0.5)).model_dump(mode="json")
    for path, value in opts.get("set", {}).items():
        head, *rest = path.split(".")
        if head == "teams*":
            for t in doc["teams"].values():
                t[rest[0]] = value
            continue
        cur = doc
        for part in [head, *rest][:-1]:
            cur = cur.setdefault(part, {})
        cur[path.split(".")[-1]] = value
    return Policy.model_validate(doc)


def windowed(sc: Scenario, k: int) -> Any:
    """The production controller fed demand as its peak over the last `k` runs."""
    inner = controller_for(sc)
    history: dict[tuple[str, str], collections.deque[int]] = collections.defaultdict(
        lambda: collections.deque(maxlen=k))

    def controller(view: ControllerView) -> Decision | None:
        pending: dict[str, dict[str, int]] = {}
        for t, by_pool in view.pending.items():
            for pool, p in by_pool.items():
                used = view.in_use.get(t, {}).get(pool, 0)
                history[(t, pool)].append(used + p)
                pending.setdefault(t, {})[pool] = max(history[(t, pool)]) - used
        return inner(dataclasses.replace(view, pending=pending))

    return controller


def scenario(name: str, strategy: str, opts: dict[str, Any]) -> Scenario:
    if name == "smoke":
        sc = tiny_scenario()
        return dataclasses.replace(sc, policy=policy_with(list(sc.teams), opts) if strategy == "rebalancer" else None)
    trace, gpus, mtbf = SCENARIOS[name]
    if trace == SYNTH:
        jobs = synthetic.generate(synthetic.default_teams(8, 256, 1.3), days=30, seed=7)
    else:
        jobs = load_trace(trace)
    teams = default_teams(jobs, gpus, 8)
    failures = Failures(mtbf_hours=mtbf, repair_hours=opts.get("repair_hours", 4.0))
    return Scenario(jobs=jobs, teams=teams, nodes=gpus // 8, failures=failures,
                    seed=opts.get("seed", 1), controller_interval_s=opts.get("interval_s", 900.0),
                    policy=policy_with(teams, opts) if strategy == "rebalancer" else None)


def main() -> None:
    if sys.argv[1:] == ["--smoke"]:  # SMOKE_HELP
        sys.argv[1:] = ["smoke", "rebalancer", "smoke"]
    name, strategy, label = sys.argv[1], sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else "default"
    opts = json.loads(sys.argv[4]) if len(sys.argv) > 4 else {}
    sc = scenario(name, strategy, opts)
    k = opts.get("window_ticks")
    started = time.process_time()
    result = run_strategy(sc, strategy, controller=windowed(sc, k) if strategy == "rebalancer" and k else None)
    out = result.output()
    out.pop("teams")
    out.update(seed=opts.get("seed", 1), scenario=name, strategy=strategy, label=label,
               cpu_s=round(time.process_time() - started, 1))
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
