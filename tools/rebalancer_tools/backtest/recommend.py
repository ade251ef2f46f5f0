"""Suggestions for a better policy from a cluster's history, each with its evidence.

- Guarantees from each team's demand percentiles: the `percentile` (50: the median) of its demand (in use +
  pending) in every accelerator pool, scaled down together when they add up to more than GUARANTEE_SHARE of the
  pool's smallest healthy capacity of the history (guarantees that take the whole pool leave nothing to move to
  where demand goes). A team idle most of the time gets a lower guarantee, a busy one a higher.
- Approval thresholds from the distribution of moves in the current policy's backtest: `moved_accelerators` and
  `max_decrease_percent` at the `approval_percentile` (95) of what its plans moved and took, so routine moves pass
  and the largest few ask an admin.
- Cooldown from churn: a change undone within the hour (a reversal) is only stopped by holding a changed quota
  for the hour; a shorter cooldown delays the reversal, it does not remove it. So reversals → cooldown of an hour.
- min_step from churn: when most reversals are of less than one node's accelerators (jitter, not a burst that
  needs the capacity), min_step just above them.
Each suggestion changes the policy only where it differs; everything else in the file is kept, its comments and
key order too (backtest.policy_text).
"""

from __future__ import annotations

import difflib
import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import yaml

from rebalancer.catalog import specs as catalog
from rebalancer.domain.policy import Policy, family_types
from rebalancer_tools.backtest.policy_text import Edit, apply_edits
from rebalancer_tools.backtest.replay import CHURN_WINDOW, Replay, State
from rebalancer_tools.simulator.metrics import percentile

GUARANTEE_PERCENTILE = 50.0
APPROVAL_PERCENTILE = 95.0
GUARANTEE_SHARE = 0.5


@dataclass(frozen=True, slots=True)
class Suggestion:
    field: str  # the policy path, e.g. teams.research.guarantee.ml.p5.48xlarge
    before: Any
    after: Any
    evidence: str

    @property
    def changes(self) -> bool:
        return bool(self.before != self.after)


def _demand_series(states: Sequence[State], team: str, pool: str) -> list[float]:
    return [s.use.get(team, {}).get(pool, (0.0, 0.0))[0] for s in states]


def suggest_guarantees(states: Sequence[State], policy: Policy,
                       pct: float = GUARANTEE_PERCENTILE) -> list[Suggestion]:
    pools = sorted({p for s in states for p in s.capacity})
    out = []
    for pool in pools:
        capacity = GUARANTEE_SHARE * min(s.capacity.get(pool, 0.0) for s in states)
        typical = sorted(s.capacity.get(pool, 0.0) for s in states)[len(states) // 2]
        wanted: dict[str, float] = {}
        stats: dict[str, str] = {}
        for team in policy.active_teams():
            tp = policy.teams[team]
            if any(family_types(k) and pool in family_types(k) for k in tp.guarantee):
                continue  # a family guarantee is the admin's to split; not rewritten per type
            series = sorted(_demand_series(states, team, pool))
            idle = sum(1 for d in series if d <= 0) / len(series)
            wanted[team] = float(math.floor(percentile(series, pct)))
            stats[team] = (f"demand p10 {percentile(series, 10):g}, p50 {percentile(series, 50):g}, "
                           f"p90 {percentile(series, 90):g} over {len(series)} states; no demand "
                           f"{idle:.0%} of the time")
        total = sum(wanted.values())
        scaled = ""
        if total > capacity > 0:
            factor = capacity / total
            wanted = {t: float(math.floor(v * factor)) for t, v in wanted.items()}
            scaled = (f"; scaled by {factor:.2f} so the guarantees fit {GUARANTEE_SHARE:.0%} of the smallest "
                      f"healthy capacity ({capacity:g})")
        for team, g in sorted(wanted.items()):
            tp = policy.teams[team]
            before = tp.guarantee_for(pool, typical)
            cap = tp.cap_for(pool, typical)
            after = min(g, float(math.floor(cap)) if math.isfinite(cap) else g)
            capped = f"; held at cap {cap:g}" if after < g else ""
            if int(after) == int(before):
                continue
            out.append(Suggestion(f"teams.{team}.guarantee.{pool}", tp.guarantee.get(pool), int(after),
                                  f"{team} {pool}: {stats[team]}; guarantee {before:g} → {after:g} "
                                  f"(p{pct:g}{scaled}{capped})"))
    return out


def _rounded_up(value: float, step: int) -> int:
    return int(math.ceil(value / step - 1e-9) * step)


def suggest_approval(current: Replay, policy: Policy, pct: float = APPROVAL_PERCENTILE) -> list[Suggestion]:
    """Thresholds at the percentile of the moves. A threshold raised (fewer plans asked) says in its evidence how
    many plans that asked would no longer, and the largest of them; one that would turn a gate off (a decrease
    limit of 100 %: no decrease is above it) is never suggested."""
    out = []
    moves = sorted(current.plan_moves)
    a = policy.approval
    if not moves:
        return [Suggestion("approval.moved_accelerators", a.moved_accelerators, a.moved_accelerators,
                           "no plan moved accelerators in the backtest: thresholds kept")]
    asked = sum(1 for m in moves if m > a.moved_accelerators)
    threshold = max(1, math.ceil(percentile(moves, pct)))
    would = sum(1 for m in moves if m > threshold)
    out.append(Suggestion(
        "approval.moved_accelerators", a.moved_accelerators, threshold,
        f"{len(moves)} plans moved accelerators: p50 {percentile(moves, 50):g}, p90 {percentile(moves, 90):g}, "
        f"max {moves[-1]:g}; above {a.moved_accelerators}: {asked} ({asked / len(moves):.0%}); "
        f"above {threshold} (p{pct:g}): {would} ({would / len(moves):.0%})"
        + _loosening_cost([m for m in moves if a.moved_accelerators < m <= threshold], asked, "moving", "")))
    decreases = sorted(current.decrease_percents)
    if decreases:
        limit = min(100, max(5, _rounded_up(percentile(decreases, pct), 5)))
        over = sum(1 for d in decreases if d > a.max_decrease_percent)
        why = (f"{len(decreases)} decreases took p50 {percentile(decreases, 50):.0f} %, p90 "
               f"{percentile(decreases, 90):.0f} % of what the team held; above {a.max_decrease_percent:g} %: "
               f"{over}; limit at p{pct:g}, rounded up to 5: {limit} %")
        if limit >= 100 > a.max_decrease_percent:
            out.append(Suggestion("approval.max_decrease_percent", a.max_decrease_percent, a.max_decrease_percent,
                                  f"{why}; kept at {a.max_decrease_percent:g} %: a limit of 100 % would turn "
                                  "the gate off (no decrease is above it)"))
        else:
            out.append(Suggestion(
                "approval.max_decrease_percent", a.max_decrease_percent, limit,
                why + _loosening_cost([d for d in decreases if a.max_decrease_percent < d <= limit], over,
                                      "taking", " %")))
    return out


def _loosening_cost(no_longer_asked: Sequence[float], asked: int, verb: str, unit: str) -> str:
    """What a raised threshold costs: the plans that asked an admin and would apply without one."""
    if not no_longer_asked:
        return ""
    return (f"; LOOSENS the gate: {len(no_longer_asked)} of the {asked} plans that asked for approval would apply "
            f"without an admin ({verb} up to {max(no_longer_asked):g}{unit})")


def _per_node(pool: str) -> int:
    t = pool.partition(":")[0]
    return catalog.spec(t).primary_per_instance if t in catalog.known_types() else 1


def suggest_stability(current: Replay, policy: Policy) -> list[Suggestion]:
    s = policy.stability
    reversals = current.reversals
    window = CHURN_WINDOW.total_seconds() / 60
    if not reversals:
        return [Suggestion("stability.cooldown_minutes", s.cooldown_minutes, s.cooldown_minutes,
                           f"no quota change was undone within {window:g} min: cooldown and min_step kept")]
    by_team = Counter(r.team for r in reversals)
    by_hour = Counter(r.at.hour for r in reversals)
    hour, at_hour = by_hour.most_common(1)[0]
    minutes = sorted(r.minutes for r in reversals)
    teams = ", ".join(f"{t} {n}" for t, n in by_team.most_common(3))
    out = []
    cooldown = max(s.cooldown_minutes, window)
    out.append(Suggestion(
        "stability.cooldown_minutes", s.cooldown_minutes, int(cooldown) if cooldown.is_integer() else cooldown,
        f"{len(reversals)} changes undone within {window:g} min ({teams}), a median {percentile(minutes, 50):g} "
        f"min after the change they undo; {at_hour} of them in the {hour:02d}:00 hour (UTC); a cooldown under "
        f"{window:g} min only delays such a reversal"))
    jitter = [r for r in reversals if r.size < _per_node(r.pool)]
    if len(jitter) * 2 >= len(reversals):
        step = max(s.min_step, int(max(r.size for r in jitter)) + 1)
        out.append(Suggestion("stability.min_step", s.min_step, step,
                              f"{len(jitter)} of {len(reversals)} reversals moved less than one node's "
                              f"accelerators (at most {max(r.size for r in jitter):g}): min_step {step}"))
    else:
        out.append(Suggestion("stability.min_step", s.min_step, s.min_step,
                              f"{len(reversals) - len(jitter)} of {len(reversals)} reversals moved a node's "
                              "accelerators or more (bursts that need the capacity): min_step kept"))
    return out


def suggest(states: Sequence[State], current: Replay, policy: Policy,
            guarantee_percentile: float = GUARANTEE_PERCENTILE,
            approval_percentile: float = APPROVAL_PERCENTILE) -> list[Suggestion]:
    return [*suggest_guarantees(states, policy, guarantee_percentile),
            *suggest_approval(current, policy, approval_percentile),
            *suggest_stability(current, policy)]


def edits(suggestions: Sequence[Suggestion]) -> list[Edit]:
    """Each suggestion that changes something, as (keys, value); a pool name keeps its dots."""
    out: list[Edit] = []
    for s in suggestions:
        if not s.changes:
            continue
        if s.field.startswith("teams."):
            _, team, field, pool = s.field.split(".", 3)
            out.append((("teams", team, field, pool), s.after or None))  # a guarantee of 0 is removed
        else:
            section, name = s.field.split(".", 1)
            out.append(((section, name), s.after))
    return out


def apply_suggestions(raw: dict[str, Any], suggestions: Sequence[Suggestion]) -> dict[str, Any]:
    """The policy document with the suggestions written in; the rest kept."""
    return apply_edits(raw, edits(suggestions))


def dump(raw: dict[str, Any]) -> str:
    return yaml.safe_dump(raw, sort_keys=False, default_flow_style=False)


def diff(before: dict[str, Any], after: dict[str, Any], name: str) -> str:
    return "".join(difflib.unified_diff(dump(before).splitlines(keepends=True), dump(after).splitlines(keepends=True),
                                        f"{name} (current)", f"{name} (recommended)"))
