"""Backtest time: a 30-day history of a 50-team cluster at 5-minute samples (8,640 states), replayed by the
production planner. The target: under a minute on a laptop, from the file to the side-by-side figures.

Run with `make bench`. The history is generated (rebalancer_tools.backtest.synthetic.random_walk: every sample
some team's demand moves, so almost every state is planned anew), written as `rebalancer history export` writes
it, then read and replayed under two policies as `rebalancer backtest` does (CPU time of this process, and wall).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

from rich.console import Console
from rich.table import Table

from rebalancer.domain.policy import Policy
from rebalancer_tools.backtest import synthetic as syn
from rebalancer_tools.backtest.history import load_history
from rebalancer_tools.backtest.run import run_backtest

TEAMS, DAYS, STEP_MINUTES, NODES = 50, 30, 5, 60
SMOKE = {"TEAMS": 5, "DAYS": 1}  # --smoke: once, small (the test suite runs it so)


def write_history(path: Path) -> int:
    """The export's lines, built as plain JSON (generating through the models would take longer than replaying)."""
    names = syn.team_names(TEAMS)
    pattern = syn.random_walk(TEAMS, seed=7)
    n = DAYS * 24 * 60 // STEP_MINUTES
    with path.open("w") as f:
        f.write(json.dumps({"type": "history", "format": 1, "cluster": "bench"}) + "\n")
        for i in range(n):
            at = syn.START + timedelta(minutes=i * STEP_MINUTES)
            teams = {}
            for t in names:
                in_use, pending = pattern(t, at)
                teams[t] = {syn.P5: {"in_use": in_use, "pending": pending, "quota": 8.0}}
            f.write(json.dumps({"type": "sample", "format": 1, "cluster": "bench", "cluster_arn": syn.ARN,
                                "at": at.isoformat(), "nodes": {syn.P5: {"healthy": NODES, "unhealthy": 0}},
                                "mig": {}, "teams": teams}) + "\n")
        f.write(json.dumps({"type": "end", "runs": 0, "samples": n}) + "\n")
    return n


def policies() -> list[tuple[str, Policy]]:
    names = syn.team_names(TEAMS)
    base = {n: {"weight": 1 + i % 3} for i, n in enumerate(names)}
    guaranteed = {n: {**tp, "guarantee": {syn.P5: 4}} for n, tp in base.items()}
    return [("current", Policy.model_validate({"teams": base})),
            ("guaranteed", Policy.model_validate({"stability": {"cooldown_minutes": 60, "min_step": 2},
                                                  "teams": guaranteed}))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--smoke", action="store_true", help="once, small (the test suite runs it so)")
    if parser.parse_args().smoke:
        globals().update(SMOKE)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "history.jsonl"
        states = write_history(path)
        size = path.stat().st_size
        cpu0, wall0 = time.process_time(), time.perf_counter()
        history = load_history(path)
        cpu1, wall1 = time.process_time(), time.perf_counter()
        pols = policies()
        result = run_backtest(history, pols[:1])
        cpu2, wall2 = time.process_time(), time.perf_counter()
        both = run_backtest(history, pols)
        cpu3, wall3 = time.process_time(), time.perf_counter()
    table = Table(title=f"backtest: {TEAMS} teams, {DAYS} days at {STEP_MINUTES}-minute samples "
                        f"({states:,} states, {size / 1e6:.0f} MB of JSON lines)")
    for col in ("step", "CPU s", "wall s", "planner calls"):
        table.add_column(col, justify="left" if col == "step" else "right")
    table.add_row("read and validate the history", f"{cpu1 - cpu0:.1f}", f"{wall1 - wall0:.1f}", "")
    table.add_row("replay one policy", f"{cpu2 - cpu1:.1f}", f"{wall2 - wall1:.1f}",
                  f"{result.replays[0].planned:,}")
    table.add_row("replay two policies side by side", f"{cpu3 - cpu2:.1f}", f"{wall3 - wall2:.1f}",
                  f"{sum(r.planned for r in both.replays):,}")
    table.add_row("file → one policy's figures", f"{cpu2 - cpu0:.1f}", f"{wall2 - wall0:.1f}", "")
    console = Console()
    console.print(table)
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    console.print(f"machine load while measuring (1/5/15 min): {load} on {os.cpu_count()} CPUs")
    ok = cpu2 - cpu0 < 60
    console.print(f"target: file to one policy's figures in under 60 s CPU: {'met' if ok else 'MISSED'}")
    if not ok:
        sys.exit(1)


if __name__ == "__main__":
    main()
