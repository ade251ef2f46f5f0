"""Backtest several policies over one history: the states are prepared once, each policy replayed on them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rebalancer.domain.policy import Policy
from rebalancer.errors import InvalidInput
from rebalancer.parsing.loading import load_model_file, parse_document
from rebalancer_tools.backtest.history import History
from rebalancer_tools.backtest.replay import Replay, State, prepare, replay


@dataclass(frozen=True, slots=True)
class Backtest:
    history: History
    states: list[State]
    replays: list[Replay]


def load_policy(path: str | Path) -> Policy:
    """The one place a policy file is read (a shared CLI input loader can replace it here)."""
    return load_model_file(Policy, path)


def load_policy_document(path: str | Path) -> tuple[dict[str, Any], Policy]:
    """The policy file as written (to rewrite it) and as validated."""
    policy = load_policy(path)
    raw = parse_document(Path(path).read_text(), str(path))
    if not isinstance(raw, dict):
        raise InvalidInput("a policy is a mapping", source=str(path), value=type(raw).__name__)
    return raw, policy


def policy_names(paths: Sequence[str]) -> list[str]:
    """Each policy's name in the report: its file name without the suffix, numbered when two are alike."""
    stems = [Path(p).stem for p in paths]
    return [s if stems.count(s) == 1 else f"{s}-{i + 1}" for i, s in enumerate(stems)]


def run_backtest(history: History, policies: Sequence[tuple[str, Policy]]) -> Backtest:
    samples = history.states()
    if not samples:
        raise InvalidInput("the history holds no run and no sample to replay", field="--history")
    states = prepare(samples)
    reference = {t: tp.weight for t, tp in policies[0][1].teams.items()}
    like = history.quota_settings()
    replays = [replay(name, states, policy, samples[0], reference, like=like) for name, policy in policies]
    return Backtest(history, states, replays)
