"""Who loses: the teams that wait longer under a strategy than under the baseline (the first strategy of a run: by
default `static`, each team on its hand-set quota alone — HiveD's "sharing safety": no team worse off than on a
private partition), and for the rebalancer the smallest policy change that keeps each of them whole, checked by
running the simulation again with it.

Worse off: p95 wait above 1.1 × the baseline's + 10 minutes, for a team with at least `MIN_JOBS` jobs (a p95 over
fewer jobs is one job's luck). The changes tried, smallest first, for the team alone: its weight × 1.5, its weight
× 2, its guarantee raised to its hand-set quota. One that keeps the team whole but makes another team worse off
than the baseline is reported with that cost; the first one that costs nobody is recommended."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rebalancer.domain.policy import Amount, Policy, TeamPolicy
from rebalancer_tools.simulator.metrics import StrategyResult, TeamResult
from rebalancer_tools.simulator.run import Scenario, effective_policy, run_strategy

MIN_JOBS = 20
SLACK_RATIO = 1.1
SLACK_S = 600.0
MAX_TEAMS = 3  # remedies are searched for the three losers with the most jobs: each try is a whole simulation


def worse(team: TeamResult, baseline: TeamResult) -> bool:
    return team.jobs >= MIN_JOBS and team.wait_p95_s > SLACK_RATIO * baseline.wait_p95_s + SLACK_S


def losers(result: StrategyResult, baseline: StrategyResult) -> list[str]:
    """The teams worse off than under the baseline, most jobs first."""
    found = [t for t, r in result.teams.items() if t in baseline.teams and worse(r, baseline.teams[t])]
    return sorted(found, key=lambda t: (-result.teams[t].jobs, t))


@dataclass(frozen=True, slots=True)
class Remedy:
    change: str
    whole: bool  # the team is no longer worse off with it
    p95_s: float  # the team's p95 wait with it
    cost: tuple[str, ...]  # other teams it makes worse off than the baseline


@dataclass(frozen=True, slots=True)
class Loser:
    team: str
    jobs: int
    p95_s: float
    baseline_p95_s: float
    tried: tuple[Remedy, ...] = ()

    @property
    def remedy(self) -> Remedy | None:
        return next((r for r in self.tried if r.whole and not r.cost), None)

    def verdict(self) -> str:
        if not self.tried:
            return "not searched"
        if (r := self.remedy) is not None:
            return f"{r.change} keeps it whole (p95 {r.p95_s / 3600:.1f} h)"
        costly = [r for r in self.tried if r.whole]
        if costly:
            return (f"none keeps it whole without costing another team: {costly[0].change} makes "
                    f"{', '.join(costly[0].cost)} worse off")
        return f"none of {', '.join(r.change for r in self.tried)} keeps it whole"

    def output(self) -> dict[str, Any]:
        return {"team": self.team, "jobs": self.jobs, "wait_p95_h": round(self.p95_s / 3600, 2),
                "baseline_wait_p95_h": round(self.baseline_p95_s / 3600, 2), "verdict": self.verdict(),
                "tried": [{"change": r.change, "whole": r.whole, "wait_p95_h": round(r.p95_s / 3600, 2),
                           "makes_worse_off": list(r.cost)} for r in self.tried]}


def candidates(policy: Policy, team: str, hand_set: Mapping[str, int]) -> list[tuple[str, Policy]]:
    """The policy changes tried for `team`, smallest first, as (what changed, the changed policy)."""
    current = policy.teams.get(team)
    if current is None:
        return []
    out = []
    for factor in (1.5, 2.0):
        out.append((f"weight {current.weight:g} → {current.weight * factor:g}",
                    current.model_copy(update={"weight": current.weight * factor})))
    guarantee = {k: Amount(value=float(v)) for k, v in hand_set.items() if v > 0}
    if guarantee and any(current.guarantee.get(k) is None or current.guarantee[k].value < a.value
                         for k, a in guarantee.items()):
        shown = ", ".join(f"{k} {int(a.value)}" for k, a in guarantee.items())
        out.append((f"guarantee → its hand-set quota ({shown})", current.model_copy(update={"guarantee": guarantee})))
    return [(what, policy.model_copy(update={"teams": {**policy.teams, team: changed}}))
            for what, changed in out if isinstance(changed, TeamPolicy)]


# Runs the rebalancer on a scenario with one change tried (`team: change`, for a progress bar to name).
Runner = Callable[[Scenario, str], StrategyResult]


def search(sc: Scenario, result: StrategyResult, baseline: StrategyResult, *, max_teams: int = MAX_TEAMS,
           run: Runner | None = None) -> list[Loser]:
    """The rebalancer's losers against the baseline, the first `max_teams` with the changes tried for them."""
    run = run or (lambda s, _: run_strategy(s, "rebalancer"))
    policy = effective_policy(sc)
    first = sc.instance_types[0]
    out = []
    for k, team in enumerate(losers(result, baseline)):
        mine, base = result.teams[team], baseline.teams[team]
        tried: list[Remedy] = []
        if k < max_teams:
            spec = next(t for t in sc.teams if t.name == team)
            hand_set = {it: spec.quota_in(it, first) for it in sc.instance_types}
            for what, changed in candidates(policy, team, hand_set):
                again = run(dataclasses.replace(sc, policy=changed), f"{team}: {what}")
                whole = not worse(again.teams[team], base)
                cost = tuple(t for t in losers(again, baseline) if t != team and t not in losers(result, baseline))
                tried.append(Remedy(what, whole, again.teams[team].wait_p95_s, cost))
                if whole and not cost:
                    break
        out.append(Loser(team, mine.jobs, mine.wait_p95_s, base.wait_p95_s, tuple(tried)))
    return out


def report(results: Mapping[str, StrategyResult], remedies: Sequence[Loser] = ()) -> dict[str, list[Loser]]:
    """Per strategy after the first: its losers against the first (the rebalancer's with `remedies` searched)."""
    names = list(results)
    if len(names) < 2:
        return {}
    baseline = results[names[0]]
    out = {}
    for name in names[1:]:
        if name == "rebalancer" and remedies:
            out[name] = list(remedies)
        else:
            r = results[name]
            out[name] = [Loser(t, r.teams[t].jobs, r.teams[t].wait_p95_s, baseline.teams[t].wait_p95_s)
                         for t in losers(r, baseline)]
    return out


def markdown(baseline: str, found: Mapping[str, Sequence[Loser]]) -> list[str]:
    if not found:
        return []
    lines = [f"## Teams worse off than under {baseline}", "",
             f"p95 wait above {SLACK_RATIO:g} × {baseline}'s + {SLACK_S / 60:g} min, teams with {MIN_JOBS} jobs or "
             "more.", ""]
    for name, teams in found.items():
        if not teams:
            lines += [f"- {name}: none", ""]
            continue
        lines += [f"{name}:", "", f"| team | jobs | wait p95 h | {baseline} p95 h | what keeps it whole |",
                  "|---|---|---|---|---|"]
        lines += [f"| {t.team} | {t.jobs} | {t.p95_s / 3600:.1f} | {t.baseline_p95_s / 3600:.1f} | {t.verdict()} |"
                  for t in teams]
        lines.append("")
    return lines
