"""`rebalancer usage`: the metered use per team against its budget, as a table, CSV, JSON and a plot."""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import boto3
import pytest
from click.testing import CliRunner
from moto import mock_aws
from support.template import create_table

from rebalancer.adapters.dynamodb.store import Store
from rebalancer.budgets.metering import EXPECTED_GAP, Reading
from rebalancer_tools.cli import cli

P5, TRN = "ml.p5.48xlarge", "ml.trn1.32xlarge"
POLICY = """
teams:
  research: {budget: {accelerator_hours: 100, money: 2000}}
  training: {budget: {accelerator_hours: 1000, scope: ml.trn1, period: week}}
prices: {ml.p5.48xlarge: 80}
"""


@pytest.fixture
def metered(tmp_path: Path) -> Iterator[Path]:
    """Two hours of November: research 8 own + 8 borrowed H100s, training 16 Trainium devices, a guest 8 H100s."""
    with mock_aws():
        create_table(boto3.client("dynamodb"))
        store = Store("t")
        start = datetime(2026, 11, 3, 8, tzinfo=UTC)
        for k in range(9):
            store.meter.record("c", Reading(at=start + k * timedelta(minutes=15),
                                     rates={"research": {P5: (8, 8)}, "training": {TRN: (16, 0)},
                                            "guest": {P5: (0, 8)}}), EXPECTED_GAP)
        policy = tmp_path / "policy.yaml"
        policy.write_text(POLICY)
        yield policy


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["usage", "--cluster", "c", "--table", "t", *args])
    return result.exit_code, result.output


def test_the_table_shows_own_and_borrowed_use_against_the_budget(metered: Path) -> None:
    code, out = run("--policy", str(metered), "--period", "2026-11", "--format", "json")
    assert code == 0, out
    rows = {r["team"]: r for r in json.loads(out)}
    research = rows["research"]
    assert (research["used_hours"], research["own_hours"], research["borrowed_hours"]) == (32, 16, 16)
    assert research["cost"] == pytest.approx(32 * 80 / 8)
    assert research["used_percent"] == pytest.approx(32.0)  # 32 of 100 hours beats 320 of 2000 money
    assert research["forecast_hours"] == pytest.approx(32)  # a past period: the forecast is what was used
    assert rows["guest"]["used_hours"] == 16
    assert rows["guest"]["budget_hours"] is None


def test_a_weekly_budget_reads_its_own_week(metered: Path) -> None:
    code, out = run("--policy", str(metered), "--period", "2026-W45", "--format", "csv")
    assert code == 0, out
    header, *lines = out.strip().splitlines()
    training = next(line for line in lines if line.startswith("training,"))
    assert training.split(",")[:3] == ["training", "2026-W45", "32.0"]
    assert "used_hours" in header


def test_the_plot_is_written(metered: Path, tmp_path: Path) -> None:
    png = tmp_path / "use.png"
    code, out = run("--policy", str(metered), "--period", "2026-11", "--plot", str(png))
    assert code == 0, out
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "research" in out


def test_a_bad_period_is_exit_2_naming_the_option(metered: Path) -> None:
    code, out = run("--policy", str(metered), "--period", "November")
    assert code == 2
    assert "--period" in out
    assert "'November' is not a month like 2026-11" in out


def test_a_bad_budget_in_the_policy_is_exit_2_naming_the_field(metered: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("teams:\n  research: {budget: {accelerator_hours: 10, timezone: Moon/Base}}\n")
    code, out = run("--policy", str(bad))
    assert code == 2
    assert "teams.research.budget.timezone" in out
    assert "Moon/Base" in out


def test_a_plot_of_nothing_metered_says_so_and_draws_nothing(metered: Path, tmp_path: Path) -> None:
    """A period before any reading: no 1970 chart and no matplotlib warning, one line saying why."""
    png = tmp_path / "empty.png"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = CliRunner().invoke(cli, ["usage", "--cluster", "c", "--table", "t", "--policy", str(metered),
                                       "--period", "2026-10", "--plot", str(png)])
    assert got.exit_code == 0, got.output
    assert [str(w.message) for w in caught if not issubclass(w.category, DeprecationWarning)] == []
    assert f"no plot written to {png}: no team used accelerators in the period" in got.stderr
    assert not png.exists()


@pytest.mark.parametrize("columns", [100, 60])
def test_the_table_fits_the_terminal(metered: Path, columns: int) -> None:
    got = CliRunner().invoke(cli, ["usage", "--cluster", "c", "--table", "t", "--policy", str(metered), "--period",
                                   "2026-11"], env={"COLUMNS": str(columns)})
    assert got.exit_code == 0, got.output
    assert max(len(line) for line in got.stdout.splitlines()) <= columns
    assert "research" in got.stdout
