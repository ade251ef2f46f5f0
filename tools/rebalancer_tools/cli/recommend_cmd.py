"""`rebalancer recommend`: a better policy for a cluster from its own history, each change with its evidence and
the backtest of the suggested policy next to the current one. Writes a policy file; never touches the cluster."""

from __future__ import annotations

import difflib
import json
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
from rich.text import Text

from rebalancer.domain.policy import Policy
from rebalancer_tools.backtest import recommend as rec
from rebalancer_tools.backtest.advice import Advice, advise, policy_text
from rebalancer_tools.backtest.evidence import covered, too_thin
from rebalancer_tools.backtest.history import load_history
from rebalancer_tools.backtest.replay import Replay, State, prepare, replay
from rebalancer_tools.backtest.report import side_by_side, write_report
from rebalancer_tools.backtest.run import load_policy_document
from rebalancer_tools.backtest.search import objective_value
from rebalancer_tools.cli.extras import require
from rebalancer_tools.cli.output import console, emit, format_option
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
from rebalancer_tools.reports.tables import Column, Listing, Record

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
@format_option()
def recommend(history_path: str, policy_path: str, output: str, report_dir: str | None,
              guarantee_percentile: float, approval_percentile: float, trials: int | None, jobs: int,
              storage: str | None, study_name: str, seed: int, fmt: str) -> None:
    """Suggest guarantees, approval thresholds, cooldown and min_step from the history, with the evidence. A policy
    is recommended (written) only when its backtest beats the current policy by the margin (two standard errors of
    the hourly differences, at least one accelerator-hour) on a history of at least a day."""
    say = _sayer(fmt)
    history = load_history(history_path)
    raw, policy = load_policy_document(policy_path)
    samples = history.states()
    states = prepare(samples)
    if _too_thin(states, say, fmt, output):
        return
    reference = {t: tp.weight for t, tp in policy.teams.items()}
    like = history.quota_settings()
    current = replay("current", states, policy, samples[0], reference, like=like)
    suggestions = rec.suggest(states, current, policy, guarantee_percentile, approval_percentile)
    candidates = [("the suggestions", rec.edits(suggestions))]
    evidence = [(s.field, s.before, s.after, s.evidence) for s in suggestions]
    searched: dict[str, Any] | None = None
    if trials:
        searched = _search(history_path, policy_path, trials, jobs, storage, study_name, seed)
        from rebalancer_tools.backtest.search import search_edits

        approval = [s for s in suggestions if s.field.startswith("approval.")]
        candidates.append((f"search trial #{searched['number']}",
                           search_edits(policy, states, searched["params"]) + rec.edits(approval)))
    advice = advise(raw, states, samples[0], reference, like, current, candidates)

    say(f"evidence ({covered(states)} of {history.cluster}):")
    trials_table = search_table(current, policy, searched) if searched else None
    _tell(say, fmt, evidence, current, advice, trials_table)
    evidence_rows = [dict(zip(("field", "before", "after", "evidence"), e, strict=True)) for e in evidence]
    if report_dir:
        write_report(Path(report_dir), f"{history.cluster}: current vs recommended", states,
                     [current, advice.best.replay], {"evidence": evidence_rows})
    written = _write(advice, raw, policy_path, output, say) if advice.recommended else None
    if written is None:
        say(f"{output} not written; the current policy stays as it is")
    if fmt == "json":
        click.echo(json.dumps({
            "history": covered(states), "too_thin": None,
            "evidence": evidence_rows,
            "backtest": [current.summary(), advice.best.replay.summary()],
            "search": None if trials_table is None else list(trials_table.records),
            "verdict": advice.verdict(), "recommended": advice.recommended, "written": written},
            indent=2, default=str))


def _too_thin(states: list[State], say: Callable[[str], None], fmt: str, output: str) -> bool:
    """True, said (and in JSON), when the history is too short to recommend anything."""
    thin = too_thin(states, "a recommendation")
    if thin:
        say(f"{thin}: no policy is recommended; {output} not written")
        if fmt == "json":
            click.echo(json.dumps({"history": covered(states), "too_thin": thin, "recommended": False,
                                   "written": None}, indent=2))
    return bool(thin)


def _tell(say: Callable[[str], None], fmt: str, evidence: list[tuple[str, Any, Any, str]], current: Replay,
          advice: Advice, trials_table: Listing | None) -> None:
    """Each suggestion with its evidence, the backtest of the current policy beside the best candidate's (and the
    search's trials), and the verdict; the tables in the chosen format, JSON's are left to the caller."""
    for field, before, after, why in evidence:
        mark = "=" if before == after else "→"
        say(f"  {field}: {_show(before)} {mark} {_show(after)}\n      {why}")
    compared = side_by_side([current, advice.best.replay], f"backtest: current vs {advice.best.name}")
    if fmt == "table":
        emit(compared, fmt)
        if trials_table is not None:
            emit(trials_table, fmt)
    elif fmt == "csv":
        emit(compared, fmt)
    say(advice.verdict())


def _sayer(fmt: str) -> Callable[[str], None]:
    """What recommend tells people: on stdout with the table, on stderr beside JSON or CSV (which stay parseable)."""
    if fmt != "table":
        return lambda text: click.echo(text, err=True)
    out = console()

    def say(text: str) -> None:  # wrapped at words to the terminal's width, like the tables
        out.print(Text(text), highlight=False)

    return say


def _write(advice: Advice, raw: dict[str, Any], policy_path: str, output: str, say: Callable[[str], None]) -> str:
    original = Path(policy_path).read_text()
    text, kept = policy_text(original, raw, advice.best.edits, json_style=Path(policy_path).suffix == ".json")
    if not kept:
        click.echo("warning: the policy's layout could not be patched in place: the recommended file is rewritten "
                   "(its comments are not kept)", err=True)
    name = Path(policy_path).name
    diff = "".join(difflib.unified_diff(original.splitlines(keepends=True), text.splitlines(keepends=True),
                                        f"{name} (current)", f"{name} (recommended)"))
    say(diff or "the recommended policy is the current one")
    write_atomically(output, text)
    say(f"recommended policy written to {output} (nothing was written to the cluster)")
    return output


def search_table(current: Replay, policy: Policy, searched: dict[str, Any]) -> Listing:
    """The search's best trials under the current policy's row: what each set, its objective's terms, its score."""
    from rebalancer_tools.backtest.search import PARTS, SPACE, parts

    now = {"trial": "current policy", "guarantee_percentile": None,
           "cooldown_minutes": policy.stability.cooldown_minutes, "min_step": policy.stability.min_step,
           **parts(current), "objective": objective_value(current)}
    rows = [now, *({"trial": f"#{t['number']}", **t["params"], **{k: t.get(k) for k in PARTS},
                    "objective": t["value"]} for t in searched["top"])]
    headers = {"guarantee_percentile": "guarantee pct", "cooldown_minutes": "cooldown min", "min_step": "min_step",
               "deficit_accelerator_hours": "deficit", "idle_guaranteed_accelerator_hours": "idle guaranteed",
               "reversals_within_hour": "reversals"}
    def percentile(r: Record) -> str:  # the current policy's guarantees are the admin's, not a percentile's
        return "as set" if r["guarantee_percentile"] is None else _show(r["guarantee_percentile"])

    columns = (Column("trial", wrap=False),
               *(Column(headers[k], key=k, cell=percentile if k == "guarantee_percentile" else None, numeric=True)
                 for k in SPACE),
               *(Column(headers[k], key=k, numeric=True) for k in PARTS),
               Column("objective", numeric=True))
    return Listing(title=f"search: the best {len(rows) - 1} of {searched['trials']} trials against the current "
                         "policy (accelerator-hours; the objective: lower is better)", columns=columns,
                   records=tuple(rows),
                   fields=("trial", *SPACE, *PARTS, "objective"))


def _search(history_path: str, policy_path: str, trials: int, jobs: int, storage: str | None, study_name: str,
            seed: int) -> dict[str, Any]:
    """The best trial; without --storage the study's journal lives in a temporary folder removed afterwards."""
    require("optuna", "recommend --search")
    from rebalancer_tools.backtest.search import SearchSpec, run_search

    with tempfile.TemporaryDirectory(prefix="rebalancer-search-") as folder:
        journal = str(Path(folder) / "study.journal")
        return run_search(SearchSpec(history_path, policy_path, trials, jobs, storage, journal, study_name, seed))
