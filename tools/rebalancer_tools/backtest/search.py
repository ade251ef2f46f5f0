"""`rebalancer recommend --search N`: N policies tried by optuna (TPE) on the history, in parallel processes.

Parameter space (each trial is the current policy with these set):
  guarantee_percentile  0, 10, …, 90   every team's guarantees from that percentile of its demand
  cooldown_minutes      0, 15, …, 180
  min_step              1 … 8
Objective, minimized (accelerator-hours and counts over the whole history):
  deficit + IDLE_WEIGHT × guaranteed-but-idle + REVERSAL_WEIGHT × reversals within an hour
Approval thresholds are not searched: the backtest takes every approval it asks for as granted, so they change how
often an admin is asked, never the outcome, and a search would only raise them; they come from the distribution of
moves instead (recommend.suggest_approval).

Trials share one optuna study: by default a journal file in a temporary folder, removed after the run (safe for
several processes on one machine); with
`--storage URL` (an RDB URL: sqlite:///study.db, postgresql://…, mysql://…) several machines join the same study by
running the same command with the same `--study-name`.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rebalancer.domain.policy import Policy
from rebalancer.errors import InvalidInput, PermanentError
from rebalancer_tools.backtest.history import load_history
from rebalancer_tools.backtest.policy_text import Edit, apply_edits
from rebalancer_tools.backtest.recommend import edits, suggest_guarantees
from rebalancer_tools.backtest.replay import Replay, State, prepare, replay
from rebalancer_tools.backtest.run import load_policy_document

IDLE_WEIGHT = 0.1
REVERSAL_WEIGHT = 5.0
SPACE = {"guarantee_percentile": (0, 90, 10), "cooldown_minutes": (0, 180, 15), "min_step": (1, 8, 1)}


def objective_value(r: Replay) -> float:
    s = r.summary()
    return float(s["deficit_accelerator_hours"] + IDLE_WEIGHT * s["idle_guaranteed_accelerator_hours"]
                 + REVERSAL_WEIGHT * s["reversals_within_hour"])


PARTS = ("deficit_accelerator_hours", "idle_guaranteed_accelerator_hours", "reversals_within_hour")
TOP = 5  # the trials recommend shows beside the current policy


def parts(r: Replay) -> dict[str, float]:
    """The objective's terms, as the backtest's summary gives them."""
    s = r.summary()
    return {k: float(s[k]) for k in PARTS}


def search_edits(policy: Policy, states: list[State], params: dict[str, Any]) -> list[Edit]:
    """The edits a trial's parameters make to the current policy."""
    return [*edits(suggest_guarantees(states, policy, float(params["guarantee_percentile"]))),
            (("stability", "cooldown_minutes"), int(params["cooldown_minutes"])),
            (("stability", "min_step"), int(params["min_step"]))]


def policy_for(raw: dict[str, Any], policy: Policy, states: list[State], params: dict[str, Any]) -> dict[str, Any]:
    """The policy document a trial's parameters describe."""
    return apply_edits(raw, search_edits(policy, states, params))


@dataclass(frozen=True, slots=True)
class SearchSpec:
    history_path: str
    policy_path: str
    trials: int
    jobs: int
    storage: str | None  # an RDB URL, or None for a journal file at journal_path (the caller's to remove)
    journal_path: str
    study_name: str
    seed: int


STORAGE_EXAMPLE = "sqlite:///study.db or postgresql://user@host/db"


def redacted(url: str) -> str:
    """The URL with its password hidden, for any message (the password is never printed)."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        return make_url(url).render_as_string(hide_password=True)
    except (ArgumentError, ValueError):
        return "(a URL that does not parse)"


def check_storage(url: str) -> str:
    """`url` when it is a database URL whose dialect and driver are installed; InvalidInput naming --storage in one
    line otherwise. Connecting is left to the search (`storage_errors`)."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        parsed = make_url(url)
    except (ArgumentError, ValueError):
        raise InvalidInput(f"not a database URL like {STORAGE_EXAMPLE}", field="--storage") from None
    try:
        parsed.get_dialect().import_dbapi()
    except ArgumentError:  # NoSuchModuleError: no such dialect
        raise InvalidInput(f"{redacted(url)}: no database kind {parsed.get_backend_name()!r} (e.g. "
                           f"{STORAGE_EXAMPLE})", field="--storage") from None
    except ImportError as e:
        raise InvalidInput(f"{redacted(url)}: the driver for {parsed.drivername} is not installed ({e.name or e}); "
                           "install it next to the tools, or use sqlite:///FILE", field="--storage") from None
    return url


@contextmanager
def storage_errors(spec: SearchSpec) -> Iterator[None]:
    """Errors of the study's database (cannot open, cannot connect, refused) as one PermanentError line."""
    from sqlalchemy.exc import SQLAlchemyError

    try:
        yield
    except (SQLAlchemyError, ImportError) as e:
        where = redacted(spec.storage) if spec.storage else spec.journal_path
        cause = str(getattr(e, "orig", None) or e).splitlines()[0]
        password = _password(spec.storage)
        if password:
            cause = cause.replace(password, "***")
        raise PermanentError(f"--storage {where}: {cause}") from None


def _password(url: str | None) -> str | None:
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        return make_url(url).password if url else None
    except (ArgumentError, ValueError):
        return None


def _storage(spec: SearchSpec) -> Any:
    from optuna.storages import JournalStorage
    from optuna.storages.journal import JournalFileBackend

    if spec.storage:
        return spec.storage
    return JournalStorage(JournalFileBackend(spec.journal_path))


def _worker(spec: SearchSpec, index: int, trials: int) -> None:
    """One process: reads the inputs itself (nothing large crosses the process boundary) and runs its trials."""
    import optuna

    quiet_optuna()
    raw, policy = load_policy_document(spec.policy_path)
    history = load_history(spec.history_path)
    samples, like = history.states(), history.quota_settings()
    states = prepare(samples)
    reference = {t: tp.weight for t, tp in policy.teams.items()}

    def objective(trial: optuna.Trial) -> float:
        params = {name: trial.suggest_int(name, lo, hi, step=step) for name, (lo, hi, step) in SPACE.items()}
        candidate = Policy.model_validate(policy_for(raw, policy, states, params))
        replayed = replay(f"trial-{trial.number}", states, candidate, samples[0], reference, like=like)
        for key, value in parts(replayed).items():  # shown beside the trial in recommend's table
            trial.set_user_attr(key, value)
        return objective_value(replayed)

    study = optuna.create_study(storage=_storage(spec), study_name=spec.study_name, direction="minimize",
                                load_if_exists=True, sampler=optuna.samplers.TPESampler(seed=spec.seed + index))
    study.optimize(objective, n_trials=trials)


def run_search(spec: SearchSpec) -> dict[str, Any]:
    """Runs the trials (spec.jobs processes; one runs in this process) and returns the best trial's parameters,
    value and the study's trial count. A database that cannot be opened or reached is one PermanentError line."""
    Path(spec.journal_path).parent.mkdir(parents=True, exist_ok=True)
    with storage_errors(spec):
        return _search(spec)


def _search(spec: SearchSpec) -> dict[str, Any]:
    import optuna

    quiet_optuna()
    optuna.create_study(storage=_storage(spec), study_name=spec.study_name, direction="minimize",
                        load_if_exists=True)
    jobs = max(1, min(spec.jobs, spec.trials))
    shares = [spec.trials // jobs + (1 if i < spec.trials % jobs else 0) for i in range(jobs)]
    if jobs == 1:
        _worker(spec, 0, shares[0])
    else:
        ctx = multiprocessing.get_context("spawn")
        procs = [ctx.Process(target=_worker, args=(spec, i, n)) for i, n in enumerate(shares)]
        for p in procs:
            p.start()
        for p in procs:
            p.join()
        failed = [p.exitcode for p in procs if p.exitcode]
        if failed:
            raise RuntimeError(f"{len(failed)} search process(es) failed (exit codes {failed})")
    study = optuna.load_study(storage=_storage(spec), study_name=spec.study_name)
    best = study.best_trial
    done = sorted((t for t in study.trials if t.value is not None), key=lambda t: (t.value, t.number))
    top = [{"number": t.number, "params": dict(t.params), "value": t.value,
            **{k: t.user_attrs[k] for k in PARTS if k in t.user_attrs}} for t in done[:TOP]]
    return {"params": dict(best.params), "value": best.value, "number": best.number, "trials": len(study.trials),
            "top": top}


def quiet_optuna() -> None:
    """Optuna's INFO log lines ("A new study created…") and its experimental-feature warnings are for people
    developing with optuna; recommend prints its own table of the trials."""
    import warnings

    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
