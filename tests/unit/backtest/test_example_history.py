"""The example history shipped with the package is the one its generator writes (generated, never edited by hand),
a week long, of the demo cluster and the demo policy's teams; tests/integration/backtest/test_backtest_recommend.py
runs `recommend` on it."""

from __future__ import annotations

import gzip
from pathlib import Path

import yaml

from rebalancer_tools.backtest import example_history as example
from rebalancer_tools.backtest.history import load_history
from rebalancer_tools.backtest.synthetic import write

ROOT = Path(__file__).resolve().parents[3]


def test_the_shipped_history_is_what_the_generator_writes(tmp_path: Path) -> None:
    again = write(example.history(), tmp_path / example.NAME)
    with gzip.open(example.shipped(), "rt") as shipped, gzip.open(again, "rt") as written:
        assert shipped.read() == written.read()  # after a change to the generator: python -m <its module>


def test_a_week_of_the_demo_clusters_teams() -> None:
    h = load_history(example.shipped())
    assert h.cluster == "demo-hyperpod"
    assert (h.samples[-1].at - h.samples[0].at).total_seconds() >= 7 * 24 * 3600 - example.STEP_MINUTES * 60
    demo = yaml.safe_load((ROOT / "examples/demo-policy.yaml").read_text())
    assert {team for s in h.samples for team in s.teams} == set(demo["teams"])
    assert example.shipped().stat().st_size < 16_000  # small: it ships in every wheel
