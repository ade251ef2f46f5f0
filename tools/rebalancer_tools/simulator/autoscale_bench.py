"""`make bench-autoscale`: what planning quotas to the autoscaler's ceiling does to waiting and to cost (node-hours),
against planning them to the nodes present, on an autoscaled pool; writes docs/simulation.md's "Autoscaled pool"
table between its AUTOSCALE markers.

Each trace runs on one pool of p5 nodes that starts at, and may not shrink below, `min_nodes` and may grow to
`max_nodes`. The teams' hand-set quotas are made for `min_nodes` (what the cluster has when they are set).
Runs are sequential by default (`--workers 1`): the machine is shared.
"""

from __future__ import annotations

import argparse
import dataclasses
import re
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from rebalancer_tools.simulator import bench, synthetic
from rebalancer_tools.simulator.autoscaling import Autoscaling
from rebalancer_tools.simulator.run import Scenario, simulate
from rebalancer_tools.simulator.teams import default_teams
from rebalancer_tools.simulator.trace import load_trace

BEGIN, END = "<!-- AUTOSCALE:BEGIN -->", "<!-- AUTOSCALE:END -->"
P5 = bench.P5


@dataclass(frozen=True, slots=True)
class Trace:
    key: str
    title: str
    min_nodes: int
    max_nodes: int
    generated: bench.Synthetic | None = None  # None: the Philly trace


TRACES = (
    Trace("philly", "Philly trace", 64, 128),
    # generated for 32 nodes (as bench-sim's overloaded scenario), run from 16 that may grow to 32
    Trace("synthetic-overload", "Synthetic, overloaded (bursty + diurnal + heavy-tailed)", 16, 32,
          bench.Synthetic(8, 1.2, 30, ("bursty", "diurnal", "heavy_tailed"), 1)),
)

# (label, strategy, autoscaled pool, controller plans to the ceiling)
ARMS = (
    ("builtin: hand-set quotas", "builtin", True, False),
    ("rebalancer, planned to the nodes present", "rebalancer", True, False),
    ("rebalancer, planned to the ceiling", "rebalancer", True, True),
    ("rebalancer, fixed pool of max_nodes", "rebalancer", False, False),
)


@dataclass(frozen=True, slots=True)
class Row:
    label: str
    wait_p50_h: float
    wait_p95_h: float
    wait_mean_h: float
    utilization: float
    node_hours: float
    peak_nodes: int
    scale_ups: int
    done: int
    jobs: int


def scenario(trace: Trace, philly: str, autoscaled: bool, to_ceiling: bool) -> Scenario:
    per_node = 8
    if trace.generated is None:
        jobs = load_trace(philly)
    else:
        g = trace.generated
        jobs = synthetic.generate(synthetic.pool_teams(g.teams, [(P5, trace.max_nodes * per_node)], g.load,
                                                       g.kinds), days=g.days, seed=g.seed)
    nodes = trace.min_nodes if autoscaled else trace.max_nodes
    teams = default_teams(jobs, nodes * per_node, per_node)  # hand-set for the nodes there at the start
    scaling = ((P5, Autoscaling(trace.min_nodes, trace.max_nodes)),) if autoscaled else ()
    return Scenario(jobs=jobs, teams=teams, pools=((P5, nodes),), autoscaling=scaling, plan_to_ceiling=to_ceiling)


def run_arm(trace: Trace, philly: str, arm: tuple[str, str, bool, bool]) -> Row:
    label, strategy, autoscaled, to_ceiling = arm
    sc = scenario(trace, philly, autoscaled, to_ceiling)
    result, sim = simulate(sc, strategy)
    return Row(label, result.wait_p50_s / 3600, result.wait_p95_s / 3600, result.wait_mean_s / 3600,
               result.utilization, sum(sim.node_hours().values()), max(sim.peak_nodes), sum(sim.scale_ups),
               result.jobs_completed, len(sc.jobs))


def table(trace: Trace, rows: Sequence[Row]) -> list[str]:
    lines = [f"### {trace.title}: {trace.min_nodes} → {trace.max_nodes} × {P5}", "",
             "| arm | wait p50 h | wait p95 h | wait mean h | util | node-hours | peak nodes | scale-ups | done |",
             "|---|---|---|---|---|---|---|---|---|"]
    lines += [f"| {r.label} | {r.wait_p50_h:.2f} | {r.wait_p95_h:.1f} | {r.wait_mean_h:.1f} | {r.utilization:.1%} "
              f"| {r.node_hours:,.0f} | {r.peak_nodes} | {r.scale_ups} | {r.done}/{r.jobs} |" for r in rows]
    return [*lines, ""]


def block(results: dict[str, list[Row]]) -> str:
    a = Autoscaling(0, 0)
    head = (f"`make bench-autoscale` — controller every 15 min, apply delay 2 min; autoscaler: nodes requested for "
            f"admitted work that cannot be placed, there {a.scale_up_delay_s / 60:g} min later; a node idle "
            f"{a.idle_scale_down_s / 60:g} min (looked for every {a.check_s / 60:g} min) is removed, never below "
            f"min_nodes. Utilization is of the nodes present; node-hours to the last job's end.")
    lines = [BEGIN, head, ""]
    for t in TRACES:
        lines += table(t, results[t.key])
    return "\n".join([*lines, END])


def write_doc(doc: Path, text: str) -> None:
    old = doc.read_text()
    pattern = re.compile(re.escape(BEGIN) + ".*?" + re.escape(END), re.S)
    doc.write_text(pattern.sub(lambda _: text, old) if pattern.search(old) else old + "\n" + text + "\n")


def _one(args: tuple[Trace, str, tuple[str, str, bool, bool]]) -> tuple[str, Row]:
    return args[0].key, run_arm(*args)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--trace", default="../shared/traces/philly-vc/jobs.csv", help="The Philly trace.")
    ap.add_argument("--doc", default="docs/simulation.md", help="Where the table goes ('': print only).")
    ap.add_argument("--workers", type=int, default=1)
    args = ap.parse_args()
    tasks = [(t, args.trace, arm) for t in TRACES for arm in ARMS]
    results: dict[str, list[Row]] = {t.key: [] for t in TRACES}
    if args.workers <= 1:
        outs = [_one(task) for task in tasks]
    else:
        with ProcessPoolExecutor(args.workers) as pool:
            outs = list(pool.map(_one, tasks))
    for key, row in outs:
        results[key].append(row)
        print(dataclasses.asdict(row), flush=True)
    text = block(results)
    print(text)
    if args.doc:
        write_doc(Path(args.doc), text)


if __name__ == "__main__":
    main()
