"""The example history shipped with the package (`_assets/examples/history-week.jsonl.gz`): a week of the demo
cluster's H100s (demo-hyperpod, ml.p5.48xlarge × 4) and its five teams, sampled every 15 minutes, so that
`rebalancer recommend` and `backtest` can be seen at work without a cluster of one's own:

    rebalancer recommend --history history-week.jsonl.gz --policy demo-policy.yaml

Generated, never edited by hand: `python -m rebalancer_tools.backtest.example_history OUT` writes it again
(tests/unit/backtest/test_example_history.py checks the shipped file is what this writes). The teams' demand is the
kind the recommendations act on: `inference` holds a guarantee of 4 it uses a few hours a day, `research` works
office hours and queues in them, `training` runs big jobs and queues more at night, `platform` bursts by a node's
worth for half an hour every four hours, and `data-science` wanders a node at a time. Against the demo's policy,
`recommend` finds the churn (reversals within the hour) and the idle guarantee and recommends a policy that beats
the current one by more than its margin. Seeded: the same samples every time."""

from __future__ import annotations

import random
import sys
from datetime import datetime
from pathlib import Path

from rebalancer_tools.backtest import synthetic as syn
from rebalancer_tools.backtest.history import History

CLUSTER = "demo-hyperpod"
DAYS = 7
STEP_MINUTES = 15
NODES = 4  # the demo cluster's ml.p5.48xlarge nodes: 32 H100s
QUOTAS = {"research": 8, "training": 8, "inference": 8, "data-science": 4, "platform": 4}
SEED = 42
NAME = "history-week.jsonl.gz"


def demand(seed: int = SEED) -> syn.Pattern:
    """Team → time → (accelerators in use, accelerators pending), in use at most the team's quota."""
    rnd = random.Random(seed)
    wander = {"level": 4.0}
    seen: dict[datetime, float] = {}

    def data_science(at: datetime) -> float:
        if at not in seen:
            if rnd.random() < 0.15:
                wander["level"] = float(max(0, min(16, wander["level"] + rnd.choice((-8, 8)))))
            seen.clear()
            seen[at] = wander["level"]
        return seen[at]

    def wanted(team: str, at: datetime) -> float:
        hour, weekday = at.hour, at.weekday() < 5
        if team == "research":
            return 14.0 if weekday and 9 <= hour < 18 else 2.0
        if team == "training":
            return 16.0 if hour >= 20 or hour < 6 else 8.0
        if team == "inference":
            return 4.0 if 12 <= hour < 14 else 0.0
        if team == "platform":
            return 9.0 if hour % 4 == 1 and at.minute < 30 else 1.0
        return data_science(at)

    def pattern(team: str, at: datetime) -> tuple[float, float]:
        want = wanted(team, at)
        running = min(want, float(QUOTAS[team]))
        return running, want - running

    return pattern


def history(seed: int = SEED) -> History:
    return syn.history(demand(seed), QUOTAS, nodes=NODES, days=DAYS, step_minutes=STEP_MINUTES, cluster=CLUSTER)


def shipped() -> Path:
    """Where the package keeps it (in a checkout, examples/ through _assets' link)."""
    return Path(__file__).resolve().parents[1] / "_assets" / "examples" / NAME


def main(argv: list[str]) -> None:
    out = Path(argv[0]) if argv else shipped()
    syn.write(history(), out)
    print(f"wrote {out}: {DAYS} days of {CLUSTER}, a sample every {STEP_MINUTES} minutes")


if __name__ == "__main__":
    main(sys.argv[1:])
