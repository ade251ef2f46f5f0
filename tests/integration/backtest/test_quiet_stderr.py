"""What a command prints on stderr is its own: no library warning (matplotlib, optuna), no optuna log line, even
on the inputs that used to bring them (a history of one state drawn in a report, a search's study)."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest
from click.testing import CliRunner
from support.replays import morning_bursts

from rebalancer_tools.backtest import synthetic as syn
from rebalancer_tools.cli import cli

POLICY = "stability:\n  cooldown_minutes: 0\nteams:\n  a: {}\n  b: {}\n"


def quiet(args: list[str], capfd: pytest.CaptureFixture[str]) -> tuple[str, str]:
    """The command's stderr, after checking that no library warned (a DeprecationWarning is not shown to users
    and is left out) and nothing else wrote to the process's stderr."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = CliRunner().invoke(cli, args)
    assert got.exit_code == 0, got.output
    shown = [f"{w.category.__name__}: {w.message} ({w.filename})" for w in caught
             if not issubclass(w.category, DeprecationWarning | PendingDeprecationWarning)]
    assert shown == []
    assert capfd.readouterr().err == ""  # a library's own handler (optuna's logging) writes here
    return got.stdout, got.stderr


def test_a_report_of_a_one_state_history_warns_of_nothing_but_its_thinness(tmp_path: Path,
                                                                            capfd: pytest.CaptureFixture[str]) -> None:
    history = syn.write(syn.history(morning_bursts, {"a": 24, "b": 8}, nodes=4, days=5 / 1440),
                        tmp_path / "h.jsonl")
    (tmp_path / "p.yaml").write_text(POLICY)
    out, err = quiet(["backtest", "--history", str(history), "--policy", str(tmp_path / "p.yaml"), "--policy",
                      str(tmp_path / "p.yaml"), "--report", str(tmp_path / "r")], capfd)
    assert err == ""
    assert "warning: the history covers 0.1 h in 1 state" in out
    assert (tmp_path / "r" / "team-a.png").exists()


def test_a_search_prints_no_optuna_log_line(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    history = syn.write(syn.history(morning_bursts, {"a": 24, "b": 8}, nodes=4, days=1, step_minutes=30),
                        tmp_path / "h.jsonl")
    (tmp_path / "p.yaml").write_text(POLICY)
    _, err = quiet(["recommend", "--history", str(history), "--policy", str(tmp_path / "p.yaml"), "-o",
                    str(tmp_path / "out.yaml"), "--search", "2", "--seed", "1"], capfd)
    assert err == ""
