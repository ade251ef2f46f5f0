"""Stability: every hold on a plan, as one ordered list of rules (`RULES`), each with the hold it gives.

Steps 1-4 of the engine say what each team should hold; the holds say what it may hold now, given its current
quota and the policy as written (DESIGN.md "Allocation semantics", step 5). They apply in this order:

  #  rule          stage   holds                                               hold it gives (after "gets A because")
  1  reservations  policy  an active, approved reservation: its team's         none: a fact of each of its changes,
                           guarantee in its pool at least what it reserves     "reservation r-1a2b for launch until
                                                                               Fri 04 Dec 18:00 UTC"
  2  budget caps   policy  a team past its budget: its ceiling at its          "budget 100 % used (…): quota held at
                           guarantee, or no borrowing (`on_exhausted`)          its guarantee until Tue 01 Dec 00:00
                                                                                UTC" (what it wants: without it)
  3  ownership     policy  a quota CloudFormation created: held outside the    a warning, "…: held outside the policy
                           policy, its amounts counted as taken                 and never rewritten …"
  4  cooldown      claim   a quota changed less than `cooldown_minutes` ago    "cooldown until Wed 02 Dec 10:42 UTC
                           keeps its amount                                     (last changed 12 min ago, cooldown
                                                                                30 min)"
  5  min_step      claim   no change smaller than `min_step`                   "a change of 2 is below min_step 3"
  6  protected     claim   a `protected_in_use` team never below what it runs  "what it runs is protected (5
                                                                                running)"
  7  shrink tiers  pool    holds that leave a pool above its capacity give     "capacity 24 is below the quotas held:
                           way, tier by tier (`SHRINK_TIERS`)                   increases cut first", "…, overridden:
                                                                                capacity 24 is below the quotas
                                                                                held" (once), and a warning
  8  reclaim       plan    a team waiting below its fair share may take       "what it runs is protected (64 running);
                           from protected teams above theirs the work Kueue    reclaims 8 accelerators of work admitted
                           reclaims first (the newest admitted), admitted      12 min ago for team b waiting below its
                           less than `reclaim.max_age_minutes` ago, within     fair share"; the team served: "reclaims
                           `reclaim.max_gpu_hours` of run time per plan         8 accelerators of work admitted 12 min
                                                                                ago from team a"
  9  max_move      plan    at most `max_move` accelerators taken from teams    "max_move 64 is reached for this run"
                           per run, over the accelerator pools in key order

A hold is a record (rebalancer.domain.plan.Hold: the rule, its words, until when); the plan shows what the policy
wants beside it, and rebalancer.engine.reasons writes the reason from both.

A *policy* rule rewrites the policy once per plan, before anything reads it (`effective`): the pools, the engine's
settings and the request writer all read that one effective policy. A *claim* rule holds one team's amount in one
pool after rounding, and sees the amounts the ones before it held (a quota min_step kept leaves protection
nothing to raise). A *pool* rule fits a pool's held amounts back into its capacity; a *plan* rule spans the pools.

Where a new rule goes, for instance "a team may lose at most N accelerators per day": its policy field
(`Stability.max_daily_loss` in rebalancer.domain.policy), the rule in this module (a `PlanRule` after max_move in
`RULES`, with the Hold it gives, and its parameter on `Settings`, set in `settings_of`), its tests
(tests/unit/allocation/test_stability.py, next to the others': what it holds, the hold it gives, its place in the
order; tests/unit/planning/test_reason_figures.py reads its words back) and its line in docs/policy/holds.md. No
other module changes: the engine applies whatever `RULES` lists, stage by stage, in the order listed. That rule also
needs what each team lost over the trailing day, which is history: it reaches `settings_of` with the planning
context, not yet
with the policy.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Literal, Protocol

from rebalancer.budgets.enforcement import enforce
from rebalancer.domain import ownership
from rebalancer.domain.context import PlanningContext
from rebalancer.domain.plan import Hold, Plan, until_text
from rebalancer.domain.policy import Policy
from rebalancer.domain.snapshot import Snapshot
from rebalancer.engine.reservations import reserved
from rebalancer.engine.rounding import EPS, cut

Surplus = Literal["idle", "spread"]
Stage = Literal["policy", "claim", "pool", "plan"]


@dataclass(frozen=True, slots=True)
class Settings:
    """The engine's settings: how surplus is shared, and the parameters of the rules below (`settings_of` reads
    them from the effective policy)."""

    surplus: Surplus = "idle"
    min_step: int = 1
    max_move: int | None = None
    # When capacity falls below the quotas (failed nodes), take the loss from quota nobody runs on before any
    # team's admitted work becomes borrowing (see `fit`). False: the older rule, holds broken proportionally.
    shrink_idle_first: bool = True
    # Quota in gang-sized steps (rebalancer.engine.gangs) in the pools that list their pending workloads.
    gang_steps: bool = False
    # The reclaim rule (`reclaim` in the policy): the youngest work it may take, and the run time it may put at risk
    # per plan (0: off).
    reclaim_max_age_minutes: float = 0.0
    reclaim_max_gpu_hours: float = 0.0


class Claims(Protocol):
    """What the rules read of a pool's claims (rebalancer.engine.allocation.Claims: one column per field, entry i
    being team i's)."""

    @property
    def team(self) -> Sequence[str]: ...
    @property
    def weight(self) -> Sequence[float]: ...
    @property
    def guarantee(self) -> Sequence[float]: ...
    @property
    def demand(self) -> Sequence[float]: ...
    @property
    def current(self) -> Sequence[float]: ...
    @property
    def in_use(self) -> Sequence[float]: ...
    @property
    def protected(self) -> Sequence[bool]: ...
    @property
    def cooldown(self) -> Sequence[Hold | None]: ...
    def __len__(self) -> int: ...


@dataclass(frozen=True, slots=True)
class Admitted:
    """One workload a team runs in a pool, as the reclaim rule reads it: its accelerators and how many minutes ago
    Kueue admitted it (None: not known, which protects it and every older workload of its team there)."""

    accelerators: float
    minutes: float | None


class PoolInput(Protocol):
    """What the plan rules read of a pool (rebalancer.engine.allocation.PoolInput)."""

    @property
    def key(self) -> str: ...
    @property
    def resource(self) -> str: ...
    @property
    def capacity(self) -> float: ...
    @property
    def claims(self) -> Claims: ...
    @property
    def admitted(self) -> tuple[tuple[Admitted, ...], ...]: ...
    @property
    def gangs(self) -> tuple[tuple[float, ...], ...]: ...


def settings_of(policy: Policy) -> Settings:
    """The engine's settings from the effective policy."""
    return Settings(surplus=policy.surplus, min_step=policy.stability.min_step, max_move=policy.stability.max_move,
                    gang_steps=policy.fairness.gang_steps, reclaim_max_age_minutes=policy.reclaim.max_age_minutes,
                    reclaim_max_gpu_hours=policy.reclaim.max_gpu_hours)


# ---------------------------------------------------------------- policy rules: one effective policy per plan


@dataclass(frozen=True, slots=True)
class Said:
    """What a policy rule did to the policy, and what the plan says about it."""

    policy: Policy
    notes: Mapping[str, str] = field(default_factory=dict)  # team → a fact in the reason of each of its changes
    warnings: tuple[str, ...] = ()
    # team → the hold that keeps its amounts below what the policy as written wants
    held: Mapping[str, Hold] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class PolicyRule:
    name: str
    holds: str
    apply: Callable[[Policy, Snapshot, PlanningContext], Said]
    warns_first: bool  # its warnings open the plan's (with the pools'), or close it (after the requests')
    stage: Stage = "policy"


@dataclass(frozen=True, slots=True)
class Effective:
    """The policy every stage of one plan reads (the pools, the engine's settings, the request writer), and what the
    policy rules that made it say: notes per team for its changes' reasons, warnings before and after the plan's."""

    policy: Policy
    notes: Mapping[str, str] = field(default_factory=dict)
    opening: tuple[str, ...] = ()
    closing: tuple[str, ...] = ()
    # per team, a policy rule's hold (a budget): what it wants is planned without
    held: Mapping[str, Hold] = field(default_factory=dict)
    # per held team, its notes but the hold's (said by the hold instead)
    unheld_notes: Mapping[str, str] = field(default_factory=dict)


def _budget_caps(policy: Policy, snapshot: Snapshot, context: PlanningContext) -> Said:
    enforced = enforce(policy, snapshot, context.budget_usage)
    held = {team: Hold(rule="budget", until=end, text=f"{enforced.notes[team]} until {until_text(end)}")
            for team, end in enforced.held_until.items()}
    return Said(enforced.policy, enforced.notes, enforced.warnings, held)


def _reservations(policy: Policy, snapshot: Snapshot, context: PlanningContext) -> Said:
    raised, notes, warnings = reserved(policy, snapshot, context.reservations)
    return Said(raised, notes, tuple(warnings))


def _ownership(policy: Policy, snapshot: Snapshot, _context: PlanningContext) -> Said:
    held, warnings = ownership.held_outside(snapshot, policy)
    return Said(held, warnings=tuple(warnings))


RESERVATIONS = PolicyRule("reservations", "an active reservation raises its team's guarantee in its pool to it",
                          _reservations, warns_first=True)
BUDGET_CAPS = PolicyRule("budget caps", "a team past its budget plans at its guarantee, or without borrowing",
                         _budget_caps, warns_first=False)
OWNERSHIP = PolicyRule("ownership", "a quota CloudFormation created is held outside the policy, never rewritten",
                       _ownership, warns_first=True)


def effective(policy: Policy, snapshot: Snapshot, context: PlanningContext,
              rules: Sequence[PolicyRule] | None = None) -> Effective:
    """The policy with the policy rules applied in order (all of `RULES`' unless `rules` names some): computed once
    per plan and read by every stage. `context`: what the rules read beyond the snapshot (budget use so far, the
    recent writes)."""
    notes: dict[str, str] = {}
    opening: list[str] = []
    closing: list[str] = []
    held: dict[str, Hold] = {}
    others: dict[str, str] = {}
    for rule in POLICY_RULES if rules is None else rules:
        said = rule.apply(policy, snapshot, context)
        policy = said.policy
        for team, note in said.notes.items():
            notes[team] = f"{notes[team]}; {note}" if team in notes else note
            if team not in said.held:
                others[team] = f"{others[team]}; {note}" if team in others else note
        held.update(said.held)
        (opening if rule.warns_first else closing).extend(said.warnings)
    return Effective(policy, notes, tuple(opening), tuple(closing), held,
                     {team: others.get(team, "") for team in held})


def unheld(policy: Policy, snapshot: Snapshot, context: PlanningContext) -> Effective:
    """The policy with every policy rule but the one that holds (budget caps): what the teams a budget holds
    would be given without it, which the plan shows as what they want."""
    return effective(policy, snapshot, context, tuple(r for r in POLICY_RULES if r is not BUDGET_CAPS))


def explain(plan: Plan, held: Effective) -> Plan:
    """The plan with each noted team's setting changes giving the note as a reason, and the closing warnings last
    (its amount changes carry the note already: the planner gives it to rebalancer.engine.reasons)."""
    if not held.notes and not held.closing:
        return plan
    notes = held.notes
    fields = tuple(f.model_copy(update={"reason": f"{f.reason}; {notes[f.team]}" if f.reason else notes[f.team]})
                   if f.team in notes else f for f in plan.field_changes)
    return plan.model_copy(update={"field_changes": fields, "warnings": (*plan.warnings, *held.closing)})


# ---------------------------------------------------------------- claim rules: one team's amount in one pool


ClaimHold = Callable[[Claims, int, int, int, Settings], tuple[int, Hold] | None]


@dataclass(frozen=True, slots=True)
class ClaimRule:
    """`hold(claims, i, amount, current, settings)`: the amount claim i is held at and why, or None; `applies`
    says whether the rule can hold anyone in the pool at all (most pools: no rule applies)."""

    name: str
    holds: str
    applies: Callable[[Claims, Settings], bool]
    hold: ClaimHold
    stage: Stage = "claim"


def cooling_down(last_modified: datetime | None, now: datetime, minutes: float) -> Hold | None:
    """The cooldown a quota last changed at `last_modified` is in at `now`, or None when it is not."""
    if last_modified is None or minutes <= 0:
        return None
    age = (now - last_modified).total_seconds() / 60
    if age < minutes:
        until = last_modified + timedelta(minutes=minutes)
        return Hold(rule="cooldown", until=until,
                    text=f"cooldown until {until_text(until)} (last changed {max(age, 0):.0f} min ago, cooldown "
                         f"{minutes:g} min)")
    return None


def _cooldown(claims: Claims, i: int, amount: int, current: int, _settings: Settings) -> tuple[int, Hold] | None:
    hold = claims.cooldown[i]
    return (current, hold) if hold is not None and amount != current else None


def _min_step(_claims: Claims, _i: int, amount: int, current: int, settings: Settings) -> tuple[int, Hold] | None:
    step = abs(amount - current)
    if 0 < step < settings.min_step:
        return current, Hold(rule="min_step", text=f"a change of {step} is below min_step {settings.min_step}")
    return None


def _protected(claims: Claims, i: int, amount: int, current: int, _settings: Settings) -> tuple[int, Hold] | None:
    if claims.protected[i] and amount < current:
        keep = min(current, math.ceil(claims.in_use[i] - EPS))
        if amount < keep:
            return keep, Hold(rule="protected", text=f"what it runs is protected ({claims.in_use[i]:g} running)")
    return None


COOLDOWN = ClaimRule("cooldown", "a quota changed less than cooldown_minutes ago keeps its amount",
                     lambda claims, _settings: any(claims.cooldown), _cooldown)
MIN_STEP = ClaimRule("min_step", "no change smaller than min_step",
                     lambda _claims, settings: settings.min_step > 1, _min_step)
PROTECTED = ClaimRule("protected", "a protected_in_use team is never planned below what it runs",
                      lambda claims, _settings: any(claims.protected), _protected)


# ---------------------------------------------------------------- pool rule: the shrink tiers


@dataclass(frozen=True, slots=True)
class Tier:
    """One tier of the shrink: what it is called in a warning (`what`; None: cut without a word), how much may be
    cut from each claim (`room`), whether a cut claim's reason says its hold was overridden (else: "unused taken
    first"), whether the warning says holds were broken (else: what was taken), and whether the tier is one of the
    idle ones that `shrink_idle_first` False leaves out."""

    name: str
    what: str | None
    room: Callable[[_Fit], list[int]]
    overrides: bool = True
    breaks_holds: bool = False
    idle: bool = False


@dataclass(frozen=True, slots=True)
class _Fit:
    after: list[int]
    desired: Sequence[int]
    holds: list[Hold | None]
    claims: Claims
    current: list[int]
    used: list[int]
    kept: list[int]


def _increases(s: _Fit) -> list[int]:
    return [max(0, a - c) for a, c in zip(s.after, s.current, strict=True)]


def _held_idle(s: _Fit) -> list[int]:
    return [max(0, s.after[i] - max(s.desired[i], s.used[i])) if s.holds[i] else 0 for i in range(len(s.after))]


def _idle(s: _Fit) -> list[int]:
    demand = s.claims.demand
    return [max(0, s.after[i] - max(s.kept[i], math.ceil(demand[i] - EPS))) for i in range(len(s.after))]


def _waiting(s: _Fit) -> list[int]:
    return [max(0, a - k) for a, k in zip(s.after, s.kept, strict=True)]


def _breaking(protected: bool) -> Callable[[_Fit], list[int]]:
    def room(s: _Fit) -> list[int]:
        return [max(0, s.after[i] - s.desired[i]) if s.holds[i] and s.claims.protected[i] == protected else 0
                for i in range(len(s.after))]
    return room


SHRINK_TIERS = (
    Tier("increases", None, _increases),
    Tier("held idle", "held quota nobody runs on", _held_idle, idle=True),
    Tier("idle", "quota nobody runs on or waits for", _idle, overrides=False, idle=True),
    Tier("waiting", "quota nobody runs on (pending work waits for it)", _waiting, overrides=False, idle=True),
    Tier("holds", "cooldown and min_step holds", _breaking(False), breaks_holds=True),
    Tier("protected", "protected in-use amounts", _breaking(True), breaks_holds=True),
)


def fit(key: str, capacity: int, after: list[int], desired: Sequence[int], holds: list[Hold | None], claims: Claims,
        settings: Settings, warnings: list[str], factor: float = 1.0) -> None:
    """Holds kept quotas above capacity (reached only when capacity fell below the current quotas): cut `after`
    back to fit, tier by tier (`SHRINK_TIERS`), each cut proportional to the tier's room. Increases first; then,
    with `shrink_idle_first`, the quota nobody runs on, least harmful first: held quota above both its fair share
    and its in-use, then any quota above its demand (nobody runs on it or waits for it), then any quota above its
    in-use (pending work waits for it; below its fair share if need be, never below its guarantee scaled by
    `factor`); then holds of unprotected teams, then protected in-use amounts, down to their fair share. Admitted
    work thus becomes borrowing (reclaimable) only when the quota nobody runs on cannot absorb the loss. An
    unprotected team's in-use is not held: the next run, no longer short, would cut it to its share anyway, and
    planning twice on the same input must give no second change."""
    if sum(after) <= capacity:
        return
    weights, names = claims.weight, claims.team
    n = range(len(claims))
    current = [round(c) for c in claims.current]
    used = [min(after[i], math.ceil(claims.in_use[i] - EPS)) for i in n]
    # Idle quota is cut down to in-use, never below the (scaled) guarantee: a guarantee holds whoever runs more.
    kept = [max(used[i], min(desired[i], math.floor(claims.guarantee[i] * factor + EPS))) for i in n]
    state = _Fit(after, desired, holds, claims, current, used, kept)
    excess = sum(after) - capacity
    held = list(holds)  # each claim's hold before the shrink
    start = list(after)
    last: dict[int, Tier] = {}  # the last tier that cut each claim
    for tier in SHRINK_TIERS:
        if excess <= 0:
            break
        if tier.idle and not settings.shrink_idle_first:
            continue
        before_cut = list(after)
        taken = cut(after, tier.room(state), excess, weights, names)
        excess -= taken
        if not taken:
            continue
        for i, was in enumerate(before_cut):
            if after[i] < was:
                last[i] = tier
        if tier.what is None:
            continue
        if tier.breaks_holds:
            warnings.append(f"{key}: capacity {capacity} is below the quotas kept by {tier.what}; "
                            f"overrode them by {taken}")
        else:
            warnings.append(f"{key}: capacity {capacity} is below the quotas; took {taken} from {tier.what}")
    for i, tier in last.items():
        if after[i] < start[i]:
            holds[i] = _shrunk(capacity, held[i], tier)


def _shrunk(capacity: int, hold: Hold | None, tier: Tier) -> Hold:
    """Why a claim the shrink cut gets what it gets: the hold it had, overridden, or what was taken first."""
    short = f"capacity {capacity} is below the quotas held"
    if hold is not None:
        return Hold(rule="capacity", text=f"{hold.text}, overridden: {short}")
    return Hold(rule="capacity", text=f"{short}: {tier.what or 'increases'} cut first")


@dataclass(frozen=True, slots=True)
class PoolRule:
    name: str
    holds: str
    apply: Callable[[str, int, list[int], Sequence[int], list[Hold | None], Claims, Settings, list[str], float],
                    None]
    stage: Stage = "pool"


SHRINK = PoolRule("shrink tiers", "holds that leave a pool above its capacity give way, tier by tier", fit)


# ---------------------------------------------------------------- plan rule: max_move


class Working(Protocol):
    """A pool between the per-pool steps and the plan rules (rebalancer.engine.allocation keeps one per pool)."""

    @property
    def input(self) -> PoolInput: ...
    @property
    def desired(self) -> list[int]: ...
    @property
    def after(self) -> list[int]: ...
    @property
    def holds(self) -> list[Hold | None]: ...
    @property
    def warnings(self) -> list[str]: ...


def _limit_moves(p: Working, budget: int, max_move: int) -> int:
    """Hold back voluntary decreases beyond `budget` (what is left of `max_move`), and the increases they would
    have paid for. Returns what the pool moves."""
    claims = p.input.claims
    weights, names = claims.weight, claims.team
    current = [round(c) for c in claims.current]
    capacity = math.floor(max(p.input.capacity, 0.0) + EPS)
    forced = max(0, sum(current) - capacity)
    decreases = [max(0, current[i] - p.after[i]) for i in range(len(claims))]
    voluntary = max(0, sum(decreases) - forced)
    allowed = min(voluntary, max(budget - forced, 0))  # forced decreases use the budget first
    if allowed < voluntary:
        # Give back part of each decrease (negative cut), then trim increases to stay within capacity.
        back = [0] * len(claims)
        cut(back, decreases, voluntary - allowed, weights, names)
        for i, b in enumerate(back):
            p.after[i] -= b  # b ≤ 0
            if b:
                p.holds[i] = Hold(rule="max_move", text=f"max_move {max_move} is reached for this run")
        excess = sum(p.after) - capacity
        room = [max(0, p.after[i] - current[i]) for i in range(len(claims))]
        trimmed = list(p.after)
        cut(p.after, room, excess, weights, names)
        for i, was in enumerate(trimmed):
            if p.after[i] < was:
                p.holds[i] = Hold(rule="max_move",
                                  text=f"max_move {max_move} holds decreases back for a later run, and the "
                                       "increases they make room for with them")
        p.warnings.append(f"{p.input.key}: max_move reached; {voluntary - allowed} of {voluntary} planned "
                          "decreases held back for a later run")
    return sum(max(0, current[i] - p.after[i]) for i in range(len(claims)))


def max_move(pools: Sequence[Working], settings: Settings) -> None:
    """`max_move` accelerators taken from teams in one run, shared by the accelerator pools in key order; decreases
    forced by lost capacity are never held back."""
    limit = budget = settings.max_move
    if limit is None or budget is None:
        return
    for p in pools:
        if p.input.resource == "accelerators":
            budget = max(0, budget - _limit_moves(p, budget, limit))


@dataclass(frozen=True, slots=True)
class PlanRule:
    name: str
    holds: str
    apply: Callable[[Sequence[Working], Settings], None]
    stage: Stage = "plan"


MAX_MOVE = PlanRule("max_move", "at most max_move accelerators taken from teams per run", max_move)


# ---------------------------------------------------------------- plan rule: reclaim


def _ages(minutes: Sequence[float]) -> str:
    low, high = math.floor(min(minutes)), math.floor(max(minutes))
    return f"{low} min ago" if low == high else f"{low}-{high} min ago"


def _teams(names: Sequence[str]) -> str:
    return ("team " if len(names) == 1 else "teams ") + ", ".join(names)


def _open(hold: Hold | None) -> bool:
    """A team the reclaim may serve: held by nothing but the shrink (its increase cut for capacity)."""
    return hold is None or hold.rule == "capacity"


def _needs(p: Working) -> list[tuple[int, ...]]:
    """Per claim, the raises that serve it below its fair share, smallest first: each lets one more of its pending
    workloads start whole, in admission order, up to its fair share (any raise up to its shortfall where the pool
    lists no workloads); () for a team that waits for nothing, is at its fair share, or is held by a rule."""
    claims, after, desired, holds = p.input.claims, p.after, p.desired, p.holds
    out: list[tuple[int, ...]] = []
    for i in range(len(claims)):
        short = desired[i] - after[i]
        if short <= 0 or claims.demand[i] <= claims.in_use[i] + EPS or not _open(holds[i]):
            out.append(())
            continue
        gangs = p.input.gangs[i] if p.input.gangs else ()
        if not gangs:
            out.append(tuple(range(1, short + 1)))
            continue
        level, raises = float(math.ceil(claims.in_use[i] - EPS)), []
        for size in gangs:
            level += size
            raise_ = math.ceil(level - EPS) - after[i]
            if raise_ > short:
                break
            if raise_ > 0:
                raises.append(raise_)
        out.append(tuple(dict.fromkeys(raises)))
    return out


def _pick(listed: Sequence[tuple[float, str, int, float]], gone: set[int], done: Mapping[int, float],
          room: Sequence[int], need: int, budget: float, max_age: float) -> list[int]:
    """The workloads (indices in `listed`) Kueue would reclaim for up to `need` more accelerators once those `gone`
    are: the newest admitted first, each team's in order and whole, admitted less than `max_age` minutes ago,
    within each team's `room` above its fair share (`done`: what is taken from it already) and within `budget`
    GPU-hours."""
    picked: list[int] = []
    more: dict[int, float] = {}
    stopped: set[int] = set()
    total = spent = 0.0
    for k, (minutes, _, i, size) in enumerate(listed):
        if total >= need - EPS or minutes >= max_age:
            break
        if k in gone or i in stopped:
            continue
        cost = size * minutes / 60
        if done.get(i, 0.0) + more.get(i, 0.0) + size > room[i] + EPS or spent + cost > budget + EPS:
            stopped.add(i)  # its older work is not Kueue's to take before this one
            continue
        picked.append(k)
        more[i] = more.get(i, 0.0) + size
        spent += cost
        total += size
    return picked


def _reclaim_pool(p: Working, budget: float, settings: Settings) -> float:
    """The reclaim in one pool, team by team (the one furthest below its fair share first), each served whole or
    not at all; returns the GPU-hours of run time it put at risk."""
    claims, after, desired = p.input.claims, p.after, p.desired
    needs = _needs(p)
    if not any(needs):
        return 0.0
    listed = _reclaimable(p)
    room = [max(0, after[i] - desired[i]) for i in range(len(claims))]
    taken: dict[int, float] = {}  # team → the accelerators of its workloads taken
    served: dict[int, list[int]] = {}  # team served → the workloads of `listed` it takes
    spent = 0.0
    free = max(0, math.floor(max(p.input.capacity, 0.0) + EPS) - sum(after))
    for r in sorted((i for i, n in enumerate(needs) if n), key=lambda i: (after[i] / desired[i], claims.team[i])):
        if free >= needs[r][-1]:
            free -= needs[r][-1]
            after[r] += needs[r][-1]
            continue
        gone = {k for ks in served.values() for k in ks}
        picked = _pick(listed, gone, taken, room, needs[r][-1] - free, budget - spent,
                       settings.reclaim_max_age_minutes)
        got = free + sum(listed[k][3] for k in picked)
        need = max((n for n in needs[r] if n <= got + EPS), default=0)
        if need <= free:
            continue
        while picked and free + sum(listed[k][3] for k in picked[:-1]) >= need - EPS:
            picked.pop()  # the raise served needs fewer workloads than were found
        left = need - free
        free = 0
        for k in picked:
            minutes, _, i, size = listed[k]
            taken[i] = taken.get(i, 0.0) + size
            cut_here = min(left, math.ceil(size - EPS))  # the last workload may be larger than what is left
            left -= cut_here
            after[i] -= cut_here
            spent += size * minutes / 60
        after[r] += need
        served[r] = picked
    _hold_reclaims(p, listed, served, taken)
    return spent


def _reclaimable(p: Working) -> list[tuple[float, str, int, float]]:
    """The work a reclaim may take in the pool, as (minutes since admitted, team, team's index, accelerators), in the
    order Kueue reclaims it."""
    # Kueue reclaims from the teams above their nominal quota the newest admitted first: every young workload of
    # the protected teams above their fair share, newest first over the pool, each team's taken whole and in order.
    claims, after, desired, holds = p.input.claims, p.after, p.desired, p.holds
    listed: list[tuple[float, str, int, float]] = []
    for i in range(len(claims)):
        hold = holds[i]
        if hold is None or hold.rule != "protected" or after[i] <= desired[i]:
            continue
        work = p.input.admitted[i]
        if any(w.minutes is None for w in work):
            continue  # a workload of unknown age might be the one Kueue takes first
        listed += [(w.minutes or 0.0, claims.team[i], i, w.accelerators) for w in work]
    listed.sort()
    return listed


def _hold_reclaims(p: Working, listed: list[tuple[float, str, int, float]], served: dict[int, list[int]],
                   taken: dict[int, float]) -> None:
    """Why each team served (the workloads of `listed` it takes) and each team taken from is held where it is."""
    claims, holds = p.input.claims, p.holds
    for r, ks in served.items():
        names = list(dict.fromkeys(claims.team[listed[k][2]] for k in ks))
        holds[r] = Hold(rule="reclaim", text=f"reclaims {sum(listed[k][3] for k in ks):g} accelerators of work "
                                             f"admitted {_ages([listed[k][0] for k in ks])} from {_teams(names)}")
    for i in taken:
        ks = [k for picked in served.values() for k in picked if listed[k][2] == i]
        teams = [claims.team[r] for r, picked in served.items() if any(listed[k][2] == i for k in picked)]
        before = holds[i]
        holds[i] = Hold(rule="reclaim", text=f"{before.text + '; ' if before else ''}reclaims "
                        f"{sum(listed[k][3] for k in ks):g} accelerators of work admitted "
                        f"{_ages([listed[k][0] for k in ks])} for {_teams(teams)} waiting below "
                        f"{'its' if len(teams) == 1 else 'their'} fair share")


def reclaim(pools: Sequence[Working], settings: Settings) -> None:
    """Teams waiting below their fair share take, from protected teams running above theirs, the work Kueue
    reclaims first: whole workloads, the newest admitted first, each admitted less than `reclaim_max_age_minutes`
    ago; no team is cut below its fair share (its desired amount), and at most `reclaim_max_gpu_hours` of run time
    (accelerators × minutes run) is put at risk over the plan's accelerator pools, in key order. The quota a team
    loses is what the teams served are short of; Kueue preempts whole workloads, so the run time counted is theirs."""
    budget = settings.reclaim_max_gpu_hours
    if budget <= 0:
        return
    for p in pools:
        if p.input.resource == "accelerators" and p.input.admitted and budget > 0:
            budget -= _reclaim_pool(p, budget, settings)


RECLAIM = PlanRule("reclaim", "a team waiting below its fair share takes young work from teams above theirs",
                   reclaim)


# ---------------------------------------------------------------- the order


def hold_pool(key: str, capacity: int, desired: Sequence[int], claims: Claims, settings: Settings,
              warnings: list[str], factor: float = 1.0) -> tuple[list[int], list[Hold | None]]:
    """The claim rules, then the pool rules, in order, on one pool's rounded amounts (`desired`; `factor`: what the
    guarantees were scaled by). Returns the amounts held and, per claim, the reason of the last rule that held it."""
    current = [round(c) for c in claims.current]
    after = list(desired)
    holds: list[Hold | None] = [None] * len(claims)
    for rule in CLAIM_RULES:
        if not rule.applies(claims, settings):
            continue
        hold = rule.hold
        for i, cur in enumerate(current):
            held = hold(claims, i, after[i], cur, settings)
            if held is not None:
                after[i], holds[i] = held
    for pool_rule in POOL_RULES:
        pool_rule.apply(key, capacity, after, desired, holds, claims, settings, warnings, factor)
    return after, holds


def hold_plan(pools: Sequence[Working], settings: Settings) -> None:
    """The plan rules, in order, across the pools (in pool-key order) once each pool's holds are applied."""
    for rule in PLAN_RULES:
        rule.apply(pools, settings)


RULES: tuple[PolicyRule | ClaimRule | PoolRule | PlanRule, ...] = (
    RESERVATIONS, BUDGET_CAPS, OWNERSHIP, COOLDOWN, MIN_STEP, PROTECTED, SHRINK, RECLAIM, MAX_MOVE)
POLICY_RULES = tuple(r for r in RULES if isinstance(r, PolicyRule))
CLAIM_RULES = tuple(r for r in RULES if isinstance(r, ClaimRule))
POOL_RULES = tuple(r for r in RULES if isinstance(r, PoolRule))
PLAN_RULES = tuple(r for r in RULES if isinstance(r, PlanRule))
