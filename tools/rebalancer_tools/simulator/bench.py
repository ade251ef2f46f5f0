"""`make bench-sim`: the whole Philly trace under every strategy; times it and writes the results table into
docs/simulation.md between the BENCH markers."""

from __future__ import annotations

import argparse
import platform
import re
import time
from pathlib import Path

from rebalancer_tools.simulator import STRATEGIES, Scenario, StrategyResult, default_teams, load_trace, run_strategy
from rebalancer_tools.simulator.report import markdown_table

BEGIN, END = "<!-- BENCH:BEGIN -->", "<!-- BENCH:END -->"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--trace", default="../shared/traces/philly-vc/jobs.csv")
    ap.add_argument("--gpus", type=int, default=1024)
    ap.add_argument("--doc", default="docs/simulation.md")
    args = ap.parse_args()
    jobs = load_trace(args.trace)
    sc = Scenario(jobs=jobs, teams=default_teams(jobs, args.gpus, 8), nodes=args.gpus // 8)
    results: dict[str, StrategyResult] = {}
    timings: dict[str, float] = {}
    for name in STRATEGIES:
        t0 = time.perf_counter()
        results[name] = run_strategy(sc, name)
        timings[name] = time.perf_counter() - t0
        print(f"{name}: {timings[name]:.1f} s", flush=True)
    total = sum(timings.values())
    reb, pooled, builtin = results["rebalancer"], results["pooled"], results["builtin"]
    checks = [
        ("all four strategies over the whole trace", "< 60 s", f"{total:.1f} s", total < 60),
        ("rebalancer utilization ÷ pooled", "≥ 97 %", f"{reb.utilization / pooled.utilization:.1%}",
         reb.utilization >= 0.97 * pooled.utilization),
        ("rebalancer p95 wait ÷ builtin", "≤ 50 %", f"{reb.wait_p95_s / builtin.wait_p95_s:.0%}",
         reb.wait_p95_s <= 0.5 * builtin.wait_p95_s),
        ("entitlement deficit, rebalancer vs builtin", "lower",
         f"{reb.entitlement_deficit_gpu_hours:,.0f} vs {builtin.entitlement_deficit_gpu_hours:,.0f} GPU-h",
         reb.entitlement_deficit_gpu_hours < builtin.entitlement_deficit_gpu_hours),
        ("lost GPU-hours, rebalancer vs builtin", "lower",
         f"{reb.lost_gpu_hours:,.0f} vs {builtin.lost_gpu_hours:,.0f}", reb.lost_gpu_hours < builtin.lost_gpu_hours),
    ]
    block = "\n".join([
        BEGIN,
        f"`make bench-sim` — {len(jobs):,} jobs, {len(sc.teams)} teams, {sc.capacity} GPUs ({sc.nodes} × "
        f"{sc.instance_type}), controller every 15 min, apply delay 2 min, no checkpoints, no node failures; "
        f"{platform.python_implementation()} {platform.python_version()}, {platform.machine()}. Wall time per "
        f"strategy: " + ", ".join(f"{n} {t:.1f} s" for n, t in timings.items()) + f" (total {total:.1f} s).",
        "",
        markdown_table(results),
        "",
        "| target | goal | reached | |",
        "|---|---|---|---|",
        *[f"| {a} | {b} | {c} | {'met' if ok else '**not met**'} |" for a, b, c, ok in checks],
        END,
    ])
    print(block)
    doc = Path(args.doc)
    text = doc.read_text() if doc.exists() else f"# Simulation\n\n{BEGIN}\n{END}\n"
    pattern = re.compile(re.escape(BEGIN) + ".*?" + re.escape(END), re.S)
    doc.write_text(pattern.sub(lambda _: block, text) if pattern.search(text) else text + "\n" + block + "\n")


if __name__ == "__main__":
    main()
