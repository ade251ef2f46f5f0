"""Recommendations on generated histories with known answers, and the recommend command's outputs."""

from __future__ import annotations

import csv
import io
import json
import re
import tempfile
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from rebalancer.domain.policy import Policy
from rebalancer_tools.backtest import recommend as rec
from rebalancer_tools.backtest import synthetic as syn
from rebalancer_tools.backtest.replay import Replay, prepare, replay
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
    # A week of mornings: each burst a few reversals, enough of them to tell the suggested cooldown's gain from
    # chance (backtest.evidence); samples every 15 minutes keep it quick.
    h = syn.write(syn.history(morning_bursts, {"a": 24, "b": 8}, nodes=4, days=7, step_minutes=15),
                  tmp_path / "history.jsonl")
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
    assert "search: the best 3 of 3 trials against the current policy" in got.output
    # A table of the trials under the current policy's row; no optuna log line, no Python dict.
    assert re.search(r"│ current policy +│ +as set │ +0 │ +1 │", got.output), got.output
    assert len(re.findall(r"│ #\d+ ", got.output)) == 3
    assert "{'" not in got.output
    assert "[I " not in got.output
    assert "A new study created" not in got.output
    policy = Policy.model_validate(yaml.safe_load(out.read_text()))
    assert policy.stability.cooldown_minutes in range(0, 181, 15)
    assert 1 <= policy.stability.min_step <= 8
    # A second machine running the same command joins the same study: its trials add to the first three.
    again = CliRunner().invoke(cli, ["recommend", "--history", str(history), "--policy", str(current), "-o",
                                     str(out), "--search", "2", "--storage", storage])
    assert again.exit_code == 0, again.output
    assert "of 5 trials against the current policy" in again.output


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


def test_a_policy_its_backtest_scores_worse_is_never_recommended(files: tuple[Path, Path], tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """The morning bursts churn without a cooldown: a suggestion of cooldown 0 over the current 60 scores worse
    (more reversals), so nothing is written and the output says why."""
    history, _ = files
    current = tmp_path / "calm.yaml"
    current.write_text("stability:\n  cooldown_minutes: 60\nteams:\n  a: {}\n  b: {}\n")
    monkeypatch.setattr(rec, "suggest", lambda *_: [rec.Suggestion("stability.cooldown_minutes", 60, 0, "try")])
    out = tmp_path / "worse.yaml"
    got = CliRunner().invoke(cli, ["recommend", "--history", str(history), "--policy", str(current), "-o", str(out)])
    assert got.exit_code == 0, got.output
    verdict = next(line for line in got.output.splitlines() if line.startswith("objective ("))
    scores = re.search(r"current policy ([\d,.]+), the suggestions ([\d,.]+):", verdict)
    assert scores, verdict
    current_score, suggested_score = (float(x.replace(",", "")) for x in scores.groups())
    assert suggested_score > current_score
    assert verdict.endswith("worse than the current policy, so no policy is recommended")
    assert f"{out} not written" in got.output
    assert not out.exists()


def test_the_recommended_file_keeps_the_policys_comments_and_key_order(files: tuple[Path, Path],
                                                                       tmp_path: Path) -> None:
    history, _ = files
    current = tmp_path / "commented.yaml"
    current.write_text("# our cluster's policy\nteams:  # two teams\n  b: {}   # serving\n  a: {}\n"
                       "stability:\n  cooldown_minutes: 0  # we like it fast\n")
    out = tmp_path / "recommended.yaml"
    got = CliRunner().invoke(cli, ["recommend", "--history", str(history), "--policy", str(current), "-o", str(out)])
    assert got.exit_code == 0, got.output
    text = out.read_text()
    assert text.startswith("# our cluster's policy\nteams:  # two teams\n  b: ")
    assert "  cooldown_minutes: 60  # we like it fast\n" in text
    assert "-  cooldown_minutes: 0  # we like it fast\n+  cooldown_minutes: 60  # we like it fast" in got.output


def replay_with(moves: list[float], decreases: list[float]) -> Replay:
    return Replay(name="current", plan_moves=moves, decrease_percents=decreases)


def test_a_raised_approval_threshold_says_what_it_lets_through() -> None:
    policy = Policy.model_validate({"approval": {"moved_accelerators": 8, "max_decrease_percent": 25},
                                    "teams": {"a": {}}})
    found = by_field(rec.suggest_approval(replay_with([4] * 10 + [12] * 10, [10] * 10 + [40] * 10), policy))
    moved = found["approval.moved_accelerators"]
    assert (moved.before, moved.after) == (8, 12)
    assert moved.evidence.endswith("LOOSENS the gate: 10 of the 10 plans that asked for approval would apply "
                                   "without an admin (moving up to 12)")
    decrease = found["approval.max_decrease_percent"]
    assert (decrease.before, decrease.after) == (25, 40)
    assert "LOOSENS the gate: 10 of the 10 plans" in decrease.evidence
    assert "(taking up to 40 %)" in decrease.evidence


def test_an_approval_gate_is_never_turned_off() -> None:
    policy = Policy.model_validate({"approval": {"max_decrease_percent": 50}, "teams": {"a": {}}})
    found = by_field(rec.suggest_approval(replay_with([16], [100] * 5), policy))
    decrease = found["approval.max_decrease_percent"]
    assert decrease.after == 50
    assert "a limit of 100 % would turn the gate off" in decrease.evidence
    assert not decrease.changes


def test_the_search_journal_leaves_nothing_behind(files: tuple[Path, Path], tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    history, current = files
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    got = CliRunner().invoke(cli, ["recommend", "--history", str(history), "--policy", str(current), "-o",
                                   str(tmp_path / "out.yaml"), "--search", "2", "--seed", "1"])
    assert got.exit_code == 0, got.output
    assert "search: the best 2 of 2 trials" in got.output
    assert list(scratch.iterdir()) == []
    result = CliRunner().invoke(cli, ["recommend", "--help"], terminal_width=200)
    assert "a journal in a temporary folder, removed afterwards" in " ".join(result.output.split())


@pytest.mark.parametrize(("days", "said"), [
    (5 / 1440, "the history covers 0.1 h in 1 state"),  # one state: nothing to compare
    (1, ", less than the margin"),  # one morning's burst: one event, not evidence
])
def test_advice_only_when_better_by_the_margin_on_a_day_or_more(tmp_path: Path, days: float, said: str) -> None:
    history = syn.write(syn.history(morning_bursts, {"a": 24, "b": 8}, nodes=4, days=days),
                        tmp_path / "history.jsonl")
    current = tmp_path / "current.yaml"
    current.write_text("stability:\n  cooldown_minutes: 0\nteams:\n  a: {}\n  b: {}\n")
    out = tmp_path / "recommended.yaml"
    got = CliRunner().invoke(cli, ["recommend", "--history", str(history), "--policy", str(current), "-o", str(out)])
    assert got.exit_code == 0, got.output
    assert said in " ".join(got.output.split())
    assert "no policy is recommended" in " ".join(got.output.split())
    assert not out.exists()


@pytest.mark.parametrize("columns", [100, 60])
def test_backtest_and_recommend_fit_the_terminal(files: tuple[Path, Path], tmp_path: Path, columns: int) -> None:
    history, current = files
    for args in (["backtest", "--history", str(history), "--policy", str(current), "--policy", str(current)],
                 ["recommend", "--history", str(history), "--policy", str(current), "-o", str(tmp_path / "r.yaml"),
                  "--search", "2"]):
        got = CliRunner().invoke(cli, args, env={"COLUMNS": str(columns)})
        assert got.exit_code == 0, got.output
        assert max(len(line) for line in got.stdout.splitlines()) <= columns


def test_backtest_as_json_and_csv(files: tuple[Path, Path]) -> None:
    history, current = files
    base = ["backtest", "--history", str(history), "--policy", str(current)]
    doc = json.loads(CliRunner().invoke(cli, [*base, "--format", "json"]).stdout)
    assert doc["too_thin"] is None
    assert doc["policies"][0]["reversals_within_hour"] > 0
    rows = list(csv.DictReader(io.StringIO(CliRunner().invoke(cli, [*base, "--format", "csv"]).stdout)))
    reversals = next(r for r in rows if r["figure"] == "quota reversals within an hour")
    assert int(reversals["current"]) == doc["policies"][0]["reversals_within_hour"]


def test_recommend_as_json_keeps_stdout_parseable(files: tuple[Path, Path], tmp_path: Path) -> None:
    history, current = files
    out = tmp_path / "r.yaml"
    got = CliRunner().invoke(cli, ["recommend", "--history", str(history), "--policy", str(current), "-o", str(out),
                                   "--search", "2", "--format", "json"])
    assert got.exit_code == 0, got.output
    doc = json.loads(got.stdout)  # the evidence, the verdict and the diff went to stderr
    assert doc["recommended"] is True
    assert doc["written"] == str(out)
    assert next(row["trial"] for row in doc["search"]) == "current policy"
    assert {e["field"] for e in doc["evidence"]} >= {"stability.cooldown_minutes"}
    assert "better by" in doc["verdict"]


def test_recommend_on_the_shipped_week_recommends_a_policy(tmp_path: Path) -> None:
    from rebalancer_tools.backtest.example_history import shipped

    demo = shipped().parent / "demo-policy.yaml"
    out = tmp_path / "recommended.yaml"
    got = CliRunner().invoke(cli, ["recommend", "--history", str(shipped()), "--policy", str(demo), "-o", str(out),
                                   "--format", "json"])
    assert got.exit_code == 0, got.output
    answer = json.loads(got.stdout)
    assert answer["too_thin"] is None
    assert answer["recommended"], answer["verdict"]
    assert answer["written"] == str(out)
    recommended = Policy.model_validate(yaml.safe_load(out.read_text()))
    assert recommended.stability.cooldown_minutes > 30  # the churn the week shows: reversals within the hour
