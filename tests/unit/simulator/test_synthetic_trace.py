"""The synthetic trace generator: seeded, each kind of team shaped as it says. That each kind meets its load on
average (120 days of jobs per kind) is checked in tests/integration/simulator/test_synthetic_loads.py."""

from __future__ import annotations

import itertools
from collections import Counter
from pathlib import Path

from click.testing import CliRunner

from rebalancer_tools.cli import cli
from rebalancer_tools.simulator.synthetic import DAY, HOUR, TeamLoad, default_teams, generate
from rebalancer_tools.simulator.trace import load_trace


def test_the_same_seed_gives_the_same_trace_and_another_seed_another() -> None:
    teams = default_teams(4, 256, 1.0)
    assert generate(teams, days=5, seed=3) == generate(teams, days=5, seed=3)
    assert generate(teams, days=5, seed=3) != generate(teams, days=5, seed=4)


def test_diurnal_work_arrives_in_the_day() -> None:
    jobs = generate([TeamLoad("t", "diurnal", 64)], days=30, seed=1)
    by_hour = Counter(int(j.submit_s % DAY // HOUR) for j in jobs)
    day, night = sum(by_hour[h] for h in range(10, 19)), sum(by_hour[h] for h in (0, 1, 2, 3, 4, 5))
    assert day > 10 * night


def test_bursty_jobs_come_in_bursts() -> None:
    jobs = generate([TeamLoad("t", "bursty", 64)], days=30, seed=1)
    gaps = sorted(b.submit_s - a.submit_s for a, b in itertools.pairwise(jobs))
    assert gaps[len(gaps) // 2] < 60  # most jobs follow another within a minute
    assert gaps[-1] > DAY  # and the bursts are days apart


def test_heavy_tailed_work_is_in_a_few_jobs() -> None:
    jobs = generate([TeamLoad("t", "heavy_tailed", 64)], days=120, seed=1)
    work = sorted((j.gpus * j.duration_s for j in jobs), reverse=True)
    assert sum(work[: len(work) // 10]) > 0.4 * sum(work)


def test_the_command_writes_a_trace_the_simulator_reads(tmp_path: Path) -> None:
    out = tmp_path / "t.csv"
    got = CliRunner().invoke(cli, ["trace", "--teams", "5", "--gpus", "128", "--days", "3", "--seed", "2",
                                   "-o", str(out)])
    assert got.exit_code == 0, got.output
    jobs = load_trace(out)
    assert {j.team for j in jobs} == {f"team-{i:02d}" for i in range(1, 6)}
