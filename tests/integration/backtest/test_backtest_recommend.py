"""Recommendations on generated histories with known answers, and the recommend command's outputs."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from rebalancer.domain.policy import Policy
from rebalancer_tools.backtest import recommend as rec
from rebalancer_tools.backtest import synthetic as syn
from rebalancer_tools.backtest.replay import prepare, replay
from rebalancer_tools.cli import cli

P5 = syn.P5


def idle_most_of_the_time(team: str, at: datetime) -> tuple[float, float]:
    """`idle` wants 16 for the first 10 % of every 100 minutes, nothing otherwise; `busy` always runs 12."""
    if team == "idle":
        minute = (at - syn.START).total_seconds() // 60
        return (16.0, 0.0) if minute % 100 < 10 else (0.0, 0.0)
    return 12.0, 0.0


def morning_bursts(team: str, at: datetime) -> tuple[float, float]:
    if team == "a":
        return 16.0, 8.0
    return (0.0, 16.0) if at.hour == 8 and at.minute < 30 else (0.0, 0.0)


def suggestions(h: syn.History, doc: dict[str, Any]) -> tuple[list[rec.Suggestion], Policy]:
    policy = Policy.model_validate(doc)
    samples = h.states()
    states = prepare(samples)
    current = replay("current", states, policy, samples[0])
    return rec.suggest(states, current, policy), policy


def by_field(found: list[rec.Suggestion]) -> dict[str, rec.Suggestion]:
    return {s.field: s for s in found}


def test_a_team_idle_90_percent_of_the_time_gets_a_lower_guarantee() -> None:
    h = syn.history(idle_most_of_the_time, {"idle": 16, "busy": 16}, nodes=4, days=2)
    found = by_field(suggestions(h, {"teams": {"idle": {"guarantee": {P5: 12}}, "busy": {"guarantee": {P5: 4}}}})[0])
    idle = found[f"teams.idle.guarantee.{P5}"]
    assert idle.before.value == 12
    assert idle.after < 12
    assert "no demand 90% of the time" in idle.evidence
    assert found[f"teams.busy.guarantee.{P5}"].after > 4


def test_bursts_every_morning_get_a_cooldown_that_stops_the_churn() -> None:
    h = syn.history(morning_bursts, {"a": 24, "b": 8}, nodes=4, days=3)
    doc = {"stability": {"cooldown_minutes": 0}, "teams": {"a": {}, "b": {}}}
    found, policy = suggestions(h, doc)
    cooldown = by_field(found)["stability.cooldown_minutes"]
    assert cooldown.before == 0
    assert cooldown.after == 60
    assert "in the 08:00 hour" in cooldown.evidence
    # The bursts move whole nodes' worth: min_step is left alone (it would refuse the burst its capacity).
    assert by_field(found)["stability.min_step"].after == 1
    samples = h.states()
    states = prepare(samples)
    suggested = Policy.model_validate(rec.apply_suggestions(doc, found))
    assert replay("current", states, policy, samples[0]).summary()["reversals_within_hour"] > 0
    assert replay("suggested", states, suggested, samples[0]).summary()["reversals_within_hour"] == 0


def test_small_jittery_reversals_get_a_min_step() -> None:
    def jitter(team: str, at: datetime) -> tuple[float, float]:
        wiggle = 2.0 if (at.minute // 5) % 2 else 0.0
        return (12.0 + wiggle, 4.0) if team == "a" else (12.0 - wiggle, 4.0)

    h = syn.history(jitter, {"a": 16, "b": 16}, nodes=4, days=0.5)
    found = by_field(suggestions(h, {"stability": {"cooldown_minutes": 0}, "teams": {"a": {}, "b": {}}})[0])
    assert found["stability.min_step"].after == 3


def test_approval_thresholds_come_from_the_moves() -> None:
    h = syn.history(morning_bursts, {"a": 24, "b": 8}, nodes=4, days=3)
    found = by_field(suggestions(h, {"stability": {"cooldown_minutes": 0}, "teams": {"a": {}, "b": {}}})[0])
    moved = found["approval.moved_accelerators"]
    assert moved.before == 16
    assert moved.after == 16  # every morning moves 16: the 95th percentile of the moves
    assert "plans moved accelerators" in moved.evidence


def test_a_suggested_zero_guarantee_is_removed_and_the_rest_of_the_file_kept() -> None:
    raw = {"mode": "approve", "teams": {"a": {"weight": 3, "guarantee": {P5: 8}}}}
    out = rec.apply_suggestions(raw, [rec.Suggestion(f"teams.a.guarantee.{P5}", 8, 0, "")])
    assert out == {"mode": "approve", "teams": {"a": {"weight": 3}}}
    assert raw["teams"]["a"]["guarantee"] == {P5: 8}


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    h = syn.write(syn.history(morning_bursts, {"a": 24, "b": 8}, nodes=4, days=1), tmp_path / "history.jsonl")
    p = tmp_path / "current.yaml"
    p.write_text("stability:\n  cooldown_minutes: 0\nteams:\n  a: {}\n  b: {}\n")
    return h, p


def test_recommend_writes_a_valid_policy_and_prints_the_evidence_and_the_diff(files: tuple[Path, Path],
                                                                                tmp_path: Path) -> None:
    history, current = files
    out = tmp_path / "recommended.yaml"
    got = CliRunner().invoke(cli, ["recommend", "--history", str(history), "--policy", str(current), "-o", str(out),
                                   "--report", str(tmp_path / "report")])
    assert got.exit_code == 0, got.output
    policy = Policy.model_validate(yaml.safe_load(out.read_text()))
    assert policy.stability.cooldown_minutes == 60
    assert "stability.cooldown_minutes: 0 → 60" in got.output
    assert "-  cooldown_minutes: 0\n+  cooldown_minutes: 60" in got.output
    assert "nothing was written to the cluster" in got.output
    assert (tmp_path / "report" / "team-b.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_recommend_search_tries_the_trials_and_recommends_a_policy_in_the_space(files: tuple[Path, Path],
                                                                                 tmp_path: Path) -> None:
    history, current = files
    out = tmp_path / "searched.yaml"
    storage = f"sqlite:///{tmp_path / 'study.db'}"
    got = CliRunner().invoke(cli, ["recommend", "--history", str(history), "--policy", str(current), "-o", str(out),
                                   "--search", "3", "--storage", storage, "--seed", "1"])
    assert got.exit_code == 0, got.output
    assert "best of 3 trials" in got.output
    policy = Policy.model_validate(yaml.safe_load(out.read_text()))
    assert policy.stability.cooldown_minutes in range(0, 181, 15)
    assert 1 <= policy.stability.min_step <= 8
    # A second machine running the same command joins the same study: its trials add to the first three.
    again = CliRunner().invoke(cli, ["recommend", "--history", str(history), "--policy", str(current), "-o",
                                     str(out), "--search", "2", "--storage", storage])
    assert again.exit_code == 0, again.output
    assert "best of 5 trials" in again.output


@pytest.mark.slow  # two spawned processes
def test_search_trials_run_in_parallel_processes_sharing_one_journal(files: tuple[Path, Path],
                                                                     tmp_path: Path) -> None:
    from rebalancer_tools.backtest.search import SearchSpec, run_search

    history, current = files
    journal = tmp_path / "study.journal"
    best = run_search(SearchSpec(str(history), str(current), trials=4, jobs=2, storage=None,
                                 journal_path=str(journal), study_name="s", seed=5))
    assert best["trials"] == 4
    assert set(best["params"]) == {"guarantee_percentile", "cooldown_minutes", "min_step"}
    assert journal.stat().st_size > 0
