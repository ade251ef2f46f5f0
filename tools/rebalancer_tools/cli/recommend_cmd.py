"""`rebalancer recommend`: a better policy for a cluster from its own history, each change with its evidence and
the backtest of the suggested policy next to the current one. Writes a policy file; never touches the cluster."""

from __future__ import annotations

import difflib
import tempfile
from pathlib import Path
from typing import Any

import click

from rebalancer_tools.backtest import recommend as rec
from rebalancer_tools.backtest.advice import advise, policy_text
from rebalancer_tools.backtest.history import load_history
from rebalancer_tools.backtest.replay import prepare, replay
from rebalancer_tools.backtest.report import side_by_side, write_report
from rebalancer_tools.backtest.run import load_policy_document
from rebalancer_tools.cli.extras import require
from rebalancer_tools.cli.output import console
from rebalancer_tools.cli.params import (
    SEED,
    InputFile,
    Number,
    OutputDir,
    OutputFile,
    StorageUrl,
    Whole,
    write_atomically,
)

MAX_TRIALS = 10_000  # a trial replays the whole history; ten thousand of them is already a night


def _show(value: object) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return "(none)" if value is None else str(value)


@click.command()
@click.option("--history", "history_path", required=True, type=InputFile(),
              help="JSON lines from `rebalancer history export`.")
@click.option("--policy", "policy_path", required=True, type=InputFile(),
              help="The current policy (YAML or JSON).")
@click.option("--output", "-o", default="recommended-policy.yaml", show_default=True,
              type=OutputFile(), help="Where to write the recommended policy.")
@click.option("--report", "report_dir", type=OutputDir(),
              help="Also write the backtest report (summary and per-team PNG timelines) here.")
@click.option("--guarantee-percentile", type=Number(0, 100), default=rec.GUARANTEE_PERCENTILE,
              show_default=True, help="Guarantees at this percentile of each team's demand.")
@click.option("--approval-percentile", type=Number(0, 100), default=rec.APPROVAL_PERCENTILE,
              show_default=True, help="Approval thresholds at this percentile of the current policy's moves.")
@click.option("--search", "trials", type=Whole(1, MAX_TRIALS),
              help="Also try N policies with optuna (guarantee percentile, cooldown, min_step) and recommend the best.")
@click.option("--jobs", type=Whole(1, 256), default=1, show_default=True,
              help="With --search: trials in this many processes.")
@click.option("--storage", type=StorageUrl(),
              help="With --search: optuna RDB URL (sqlite:///study.db, postgresql://…) shared by several machines; "
                   "default a journal in a temporary folder, removed afterwards.")
@click.option("--study-name", default="rebalancer-recommend", show_default=True,
              help="With --search: the study to create or join.")
@click.option("--seed", type=SEED, default=13, show_default=True, help="With --search: the sampler's seed.")
def recommend(history_path: str, policy_path: str, output: str, report_dir: str | None,
              guarantee_percentile: float, approval_percentile: float, trials: int | None, jobs: int,
              storage: str | None, study_name: str, seed: int) -> None:
    """Suggest guarantees, approval thresholds, cooldown and min_step from the history, with the evidence. A policy
    its own backtest scores worse than the current one is never recommended (nothing is written then)."""
    history = load_history(history_path)
    raw, policy = load_policy_document(policy_path)
    samples = history.states()
    states = prepare(samples)
    reference = {t: tp.weight for t, tp in policy.teams.items()}
    like = history.quota_settings()
    current = replay("current", states, policy, samples[0], reference, like=like)
    suggestions = rec.suggest(states, current, policy, guarantee_percentile, approval_percentile)
    candidates = [("the suggestions", rec.edits(suggestions))]
    evidence = [(s.field, s.before, s.after, s.evidence) for s in suggestions]
    if trials:
        best = _search(history_path, policy_path, trials, jobs, storage, study_name, seed)
        from rebalancer_tools.backtest.search import search_edits

        approval = [s for s in suggestions if s.field.startswith("approval.")]
        candidates.append((f"search trial #{best['number']}",
                           search_edits(policy, states, best["params"]) + rec.edits(approval)))
        evidence.append(("search", "", best["params"], f"best of {best['trials']} trials (#{best['number']})"))
    advice = advise(raw, states, samples[0], reference, like, current, candidates)

    click.echo(f"evidence ({len(states)} states of {history.cluster}):")
    for field, before, after, why in evidence:
        mark = "=" if before == after else "→"
        click.echo(f"  {field}: {_show(before)} {mark} {_show(after)}\n      {why}")
    console(100).print(side_by_side([current, advice.best.replay], f"backtest: current vs {advice.best.name}"))
    click.echo(advice.verdict())
    if report_dir:
        write_report(Path(report_dir), f"{history.cluster}: current vs recommended", states,
                     [current, advice.best.replay], {"evidence": [dict(zip(("field", "before", "after", "evidence"),
                                                                           e, strict=True)) for e in evidence]})
    if not advice.recommended:
        click.echo(f"{output} not written; the current policy stays as it is")
        return
    original = Path(policy_path).read_text()
    text, kept = policy_text(original, raw, advice.best.edits, json_style=Path(policy_path).suffix == ".json")
    if not kept:
        click.echo("warning: the policy's layout could not be patched in place: the recommended file is rewritten "
                   "(its comments are not kept)", err=True)
    name = Path(policy_path).name
    diff = "".join(difflib.unified_diff(original.splitlines(keepends=True), text.splitlines(keepends=True),
                                        f"{name} (current)", f"{name} (recommended)"))
    click.echo(diff or "the recommended policy is the current one")
    write_atomically(output, text)
    click.echo(f"recommended policy written to {output} (nothing was written to the cluster)")


def _search(history_path: str, policy_path: str, trials: int, jobs: int, storage: str | None, study_name: str,
            seed: int) -> dict[str, Any]:
    """The best trial; without --storage the study's journal lives in a temporary folder removed afterwards."""
    require("optuna", "recommend --search")
    from rebalancer_tools.backtest.search import SearchSpec, run_search

    with tempfile.TemporaryDirectory(prefix="rebalancer-search-") as folder:
        journal = str(Path(folder) / "study.journal")
        return run_search(SearchSpec(history_path, policy_path, trials, jobs, storage, journal, study_name, seed))
