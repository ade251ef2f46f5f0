"""What `rebalancer simulate` costs by default, against the strategies' own simulations: CPU time of the command
as a user runs it (the sample trace on 128 GPUs, every strategy), of the same simulations run alone
(run_strategy, no estimated starts, no remedies), and of the command with the estimated starts and remedies asked
for (`--eta --remedies 3`); ratios measured in the same run, with the absolute figures. The default run's bound is
1.5 × the simulations alone.

    PYTHONPATH=layers/core:tools python benchmarks/simulate_bench.py
"""

from __future__ import annotations

import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from click.testing import CliRunner

from rebalancer_tools.cli import cli
from rebalancer_tools.simulator import STRATEGIES, Scenario, default_teams, run_strategy
from rebalancer_tools.simulator.trace import read_trace

SAMPLE = Path(__file__).resolve().parents[1] / "examples" / "traces" / "philly-sample.csv"
GPUS = 128
BOUND = 1.5
DAY_S = 86_400


def cpu(work: Callable[[], object]) -> float:
    start = time.process_time()
    work()
    return time.process_time() - start


def simulate(trace: Path, *args: str) -> None:
    got = CliRunner().invoke(cli, ["simulate", "--trace", str(trace), "--gpus", str(GPUS), "--no-progress",
                                   "--format", "json", *args])
    if got.exit_code:
        raise SystemExit(got.stderr)


def main() -> None:
    smoke = sys.argv[1:] == ["--smoke"]  # once, small (the test suite runs it so; its figures mean nothing)
    # The sample's first 40 jobs: fewer would all start at once, and no estimated start or remedy would be worked out.
    # --smoke cuts their run times to a day at most (some run six weeks): as many wait, in a day's simulation.
    small = Path(tempfile.mkdtemp()) / "first-40.csv"
    header, *rows = SAMPLE.read_text().splitlines()[:41]
    if smoke:
        rows = [f"{job},{team},{submit},{min(int(duration), DAY_S)},{gpus}"
                for job, team, submit, duration, gpus in (row.split(",") for row in rows)]
    small.write_text("\n".join([header, *rows]) + "\n")
    if not smoke:  # warm: every module either run imports is loaded before timing (--smoke's last run is this one)
        simulate(small, "--eta", "--remedies", "3")
    trace = small if smoke else SAMPLE
    jobs = read_trace(trace).jobs
    sc = Scenario(jobs=jobs, teams=default_teams(jobs, GPUS, 8), nodes=GPUS // 8)
    own = cpu(lambda: [run_strategy(sc, s) for s in STRATEGIES])
    default = cpu(lambda: simulate(trace))
    asked = cpu(lambda: simulate(trace, "--eta", "--remedies", "3"))
    print(f"simulate, {trace.name} ({len(jobs)} jobs) on {GPUS} GPUs, {len(STRATEGIES)} strategies:")
    print(f"  the strategies' own simulations: {own:.1f} s CPU")
    print(f"  simulate (default):              {default / own:.2f} × ({default:.1f} s CPU; bound {BOUND} ×)")
    print(f"  simulate --eta --remedies 3:     {asked / own:.2f} × ({asked:.1f} s CPU)")


if __name__ == "__main__":
    main()
