"""What `recommend` recommends: of the candidate policies (the suggestions; with `--search`, the best trial too),
the one its backtest scores best on the search's objective, and only if that beats the current policy's score by
the margin (backtest.evidence: two standard errors of the hourly differences, at least one accelerator-hour);
otherwise nothing. The file is written by patching the current one's text (backtest.policy_text), so its
comments and key order survive; a layout the patch cannot keep is rewritten, and the caller says so."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rebalancer.domain.policy import Policy
from rebalancer.domain.quotas import ComputeQuota
from rebalancer.domain.sample import DemandSample
from rebalancer.parsing.validation import load_model
from rebalancer_tools.backtest import evidence
from rebalancer_tools.backtest.policy_text import Edit, apply_edits, patch
from rebalancer_tools.backtest.recommend import dump
from rebalancer_tools.backtest.replay import Replay, State, replay
from rebalancer_tools.backtest.search import IDLE_WEIGHT, REVERSAL_WEIGHT, objective_value

OBJECTIVE = (f"deficit + {IDLE_WEIGHT:g} × idle guaranteed + {REVERSAL_WEIGHT:g} × reversals within an hour, "
             "lower is better")


@dataclass(frozen=True, slots=True)
class Candidate:
    name: str
    edits: list[Edit]
    policy: Policy
    replay: Replay

    @property
    def score(self) -> float:
        return objective_value(self.replay)


@dataclass(frozen=True, slots=True)
class Advice:
    current: Replay
    best: Candidate

    @property
    def current_score(self) -> float:
        return objective_value(self.current)

    @property
    def gain(self) -> evidence.Gain:
        return evidence.gain(self.current, self.best.replay, self.current_score, self.best.score)

    @property
    def recommended(self) -> bool:
        """The best candidate scores better than the current policy by the margin (evidence.gain; approval
        thresholds never change a score: the backtest grants every approval)."""
        return self.gain.enough

    def verdict(self) -> str:
        line = (f"objective ({OBJECTIVE}): current policy {self.current_score:,.1f}, "
                f"{self.best.name} {self.best.score:,.1f}")
        if self.best.score > self.current_score + 1e-9:
            return f"{line}: worse than the current policy, so no policy is recommended"
        return f"{line}: {self.gain.text()}" + ("" if self.recommended else ", so no policy is recommended")


def advise(raw: dict[str, Any], states: Sequence[State], first: DemandSample, reference: Mapping[str, float],
           like: Sequence[ComputeQuota], current: Replay, candidates: Sequence[tuple[str, list[Edit]]]) -> Advice:
    """Each candidate replayed on the history; the best kept (the first of equals)."""
    scored = []
    for name, edits in candidates:
        policy = load_model(Policy, apply_edits(raw, edits), f"recommended policy ({name})")
        scored.append(Candidate(name, list(edits), policy, replay(name, states, policy, first, reference,
                                                                  like=like)))
    return Advice(current, min(scored, key=lambda c: c.score))


def policy_text(text: str, raw: dict[str, Any], edits: Sequence[Edit], *, json_style: bool) -> tuple[str, bool]:
    """The recommended file's text, and whether the original's comments and layout were kept."""
    patched = patch(text, edits, json_style=json_style)
    if patched is not None:
        return patched, True
    return dump(apply_edits(raw, edits)), False
