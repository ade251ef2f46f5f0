"""Many clusters, one deployment: how long a burst of 1,000 mixed events across 50 managed clusters takes to settle
(every event handled, every run ended, every follow-up run started and ended), through the real trigger, the
template's table and Step Functions in moto (rebalancer_tools.local.burst). Runs end when the harness stops them, so the
figure is the controller's own cost (trigger, lock, follow-ups), not the runs' duration. Run with `make bench`."""

from __future__ import annotations

import argparse
import logging
import os

from rebalancer_tools.local.burst import run_burst


def main() -> None:
    os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")
    logging.getLogger("aws_lambda_powertools").setLevel(logging.WARNING)
    from rebalancer.app.observability import logger

    logger.setLevel("WARNING")
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--smoke", action="store_true", help="once, small (the test suite runs it so)")
    clusters, events = (3, 30) if parser.parse_args().smoke else (50, 1000)
    result = run_burst(clusters=clusters, events=events, seed=7)
    print(f"burst: {result.summary()}")
    print(f"burst: {result.events / result.settle_seconds:.0f} events/s; at most {result.max_runs_per_cluster} runs "
          f"for one cluster; outcomes {dict(sorted(result.outcomes.items()))}")
    if result.overlaps or result.lost:
        raise SystemExit("burst: a guarantee failed (overlapping runs or a lost event)")


if __name__ == "__main__":
    main()
