"""`rebalancer simulate` runs what it is asked for: the strategies' simulations by default; the estimated starts
(`--eta`) and the remedies (`--remedies N`) only when asked, each a phase the progress bar names."""

from __future__ import annotations

import io
import json
from pathlib import Path

from click.testing import CliRunner
from rich.console import Console
from support.sim_results import strategy_result as _result
from support.sim_results import team_result as _team

from rebalancer_tools.cli import cli
from rebalancer_tools.cli.simulate_cmd import Phases, _losers
from rebalancer_tools.simulator import Scenario
from rebalancer_tools.simulator.teams import TeamSpec
from rebalancer_tools.simulator.trace import TraceJob


def _trace(tmp_path: Path) -> Path:
    """Two teams on 16 GPUs, a's work queued behind b's: jobs wait, so there are starts to estimate."""
    rows = ["job_id,team,submit_s,duration_s,gpus"]
    rows += [f"a{i},a,{i * 600},7200,8" for i in range(12)] + [f"b{i},b,{i * 900},5400,8" for i in range(8)]
    path = tmp_path / "trace.csv"
    path.write_text("\n".join(rows) + "\n")
    return path


def _strategies(trace: Path, *args: str) -> dict[str, dict[str, object]]:
    got = CliRunner().invoke(cli, ["simulate", "--trace", str(trace), "--gpus", "16", "--format", "json",
                                   "--no-progress", *args])
    assert got.exit_code == 0, got.stderr
    strategies: dict[str, dict[str, object]] = json.loads(got.stdout)["strategies"]
    return strategies


def test_the_estimated_starts_are_measured_only_when_asked(tmp_path: Path) -> None:
    trace = _trace(tmp_path)
    default = _strategies(trace)
    assert not any("eta" in r for r in default.values())
    assert _strategies(trace, "--no-eta") == default  # the old flag is accepted and is the default
    asked = _strategies(trace, "--eta")
    assert "eta" in asked["rebalancer"]
    assert {n: {k: v for k, v in r.items() if k != "eta"} for n, r in asked.items()} == default  # same allocation


def test_remedies_are_searched_only_when_asked_and_the_bar_names_each_phase() -> None:
    """a waits 5 h under the rebalancer against 1 h under static: a loser, whose remedies are real simulations."""
    sc = Scenario(jobs=[TraceJob("j", "a", 0, 60, 1)], teams=[TeamSpec("a", 1, 8), TeamSpec("b", 1, 8)], nodes=2)
    results = {"static": _result("static", {"a": _team(50, 1), "b": _team(50, 1)}),
               "rebalancer": _result("rebalancer", {"a": _team(50, 5), "b": _team(50, 1)})}
    with Phases(None) as phases:
        [listed] = _losers(sc, results, 0, phases)["rebalancer"]
    assert (listed.team, listed.tried) == ("a", ())
    out = io.StringIO()
    with Phases(Console(file=out, force_terminal=True, width=120)) as phases:
        phases.run(sc, "static", "static: simulating")
        [searched] = _losers(sc, results, 1, phases)["rebalancer"]
    assert searched.tried  # a simulation per change tried
    shown = out.getvalue()
    assert "static: simulating" in shown
    assert "remedy a: weight 1 → 1.5" in shown
