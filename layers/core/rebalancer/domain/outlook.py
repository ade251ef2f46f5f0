"""What the plan step stores with each run for the teams' questions (`rebalancer why`, `/rebalancer why`): each
pending workload's estimated start (rebalancer.planning.eta) and each team's standing over the fair-share window
(rebalancer.planning.standing), so that the answer reads one stored document instead of computing within Slack's
three seconds. Also what the plan step carries from run to run (`RunHistory`): to estimate durations, the
workloads running as last seen and the run durations of those seen to finish; to say how good the estimates have
been, what a sample of the pending workloads was first told and how the latest starts turned out against it."""

from typing import Any, Literal

from pydantic import AwareDatetime, Field, NonNegativeFloat, PositiveFloat, model_validator

from rebalancer.domain.frozen import Frozen

DURATIONS_KEPT = 50  # per team, newest last (rebalancer.forecast.durations.KEPT says why)
# Pending workloads whose first estimate is kept until they start: a sample by the hash of their name (unbiased, and
# a bounded item at 10,000 pending); 1,000 gives the latest OUTCOMES_KEPT within a day or two on a busy cluster.
TOLD_KEPT = 1_000
OUTCOMES_KEPT = 200  # the track record's workloads: its share within ±3.5 points (one standard error at 50 %)


def workload_key(team: str, name: str, pool: str) -> str:
    """How the run history and the forecast know a workload on an instance type: by its team and name, since Kueue's
    names are unique only within a namespace (`team/name@pool`; neither a team nor a Kubernetes name holds `/`)."""
    return f"{team}/{name}@{pool}"


class WorkloadEta(Frozen):
    """A pending workload's estimated start and its range (`latest` None: later than the forecast reaches at the
    upper quartiles), or no estimate and why (`unknown`, a sentence)."""

    name: str
    team: str
    pool: str
    start: AwareDatetime | None = None
    earliest: AwareDatetime | None = None
    latest: AwareDatetime | None = None
    unknown: str | None = None


class PoolStanding(Frozen):
    """Accelerator-hours over the window on one instance type: what the team received (own and borrowed), and what
    it was entitled to, its weighted share of what the teams that count received there. None with the reason in
    `uncounted`: "weight" (no weight in the policy), "idle" (neither demand now nor use in the window), "unused" (no
    team that counts has a recorded use of the pool over the window yet, as right after the first run: there is
    nothing to share out)."""

    pool: str
    received_hours: NonNegativeFloat
    entitled_hours: NonNegativeFloat | None = None
    uncounted: Literal["weight", "idle", "unused"] | None = None


class Standing(Frozen):
    window_hours: float
    pools: tuple[PoolStanding, ...] = ()
    budget: str | None = None  # `budget 92 % used (…)`, for a team with a budget


class TrackRecord(Frozen):
    """How the estimates on this cluster have turned out: of the latest `workloads` that waited an hour or more
    before they started, the share whose first estimate put their wait within a factor 2 of what it was (the
    figure `rebalancer simulate` reports as `eta.within_2x`)."""

    workloads: int
    within_2x: float


class Outlook(Frozen):
    taken_at: AwareDatetime
    estimates: tuple[WorkloadEta, ...] = ()
    standing: dict[str, Standing] = Field(default_factory=dict)
    notes: tuple[str, ...] = ()  # what the estimates rest on (finished runs seen, re-plans)
    track_record: TrackRecord | None = None  # None: no workload measured yet
    # why the next run's estimates are degraded (the run history could not be kept for it; said in the notes too)
    degraded: str | None = None


class Seen(Frozen):
    """A workload running as a run saw it: its team, since when, when it was last seen running, and the run time it
    declares (None: none)."""

    team: str
    started: AwareDatetime
    last_seen: AwareDatetime
    declared_s: PositiveFloat | None = None


class Told(Frozen):
    """What a pending workload was told the first time a run saw it: since when it waits, its estimated start
    (None: it was given none) and the likely range told with it (`earliest` None: none, as in a history written
    before ranges were kept; `latest` None with an `earliest`: no later bound)."""

    queued: AwareDatetime
    start: AwareDatetime | None = None
    earliest: AwareDatetime | None = None
    latest: AwareDatetime | None = None


class Outcome(Frozen):
    """A workload that waited an hour or more: how long, how long its first estimate said (None: none), and whether
    it started within the likely range told with that estimate (None: it was told no range)."""

    waited_s: NonNegativeFloat
    estimated_s: float | None = None
    in_range: bool | None = None


class RunHistory(Frozen):
    running: dict[str, Seen] = Field(default_factory=dict)  # by workload_key
    finished: dict[str, tuple[float, ...]] = Field(default_factory=dict)  # team → run durations (s), newest last
    # team → of its finished runs that declared a run time, what they ran ÷ what they declared; newest last
    declared: dict[str, tuple[float, ...]] = Field(default_factory=dict)
    told: dict[str, Told] = Field(default_factory=dict)  # by workload_key: at most TOLD_KEPT, until they start
    outcomes: tuple[Outcome, ...] = ()  # newest last, at most OUTCOMES_KEPT
    # the quantile levels the likely range's low and high ends are taken at, as the outcomes moved them
    # (rebalancer.planning.eta.adapted); None: not moved yet, so those it starts from
    levels: tuple[float, float] | None = None

    @model_validator(mode="before")
    @classmethod
    def _known_by_team(cls, data: Any) -> Any:
        """A history written when workloads were known by name alone (`name@pool`), read as one known by team: a
        running workload's entry says its team; a first estimate's does not, so it is left out (that workload's
        wait is not measured; the outcomes already measured stay)."""
        if not isinstance(data, dict):
            return data
        running, told = data.get("running") or {}, data.get("told") or {}
        if all("/" in k for k in (*running, *told)):
            return data
        def team(seen: Any) -> str:
            return str(seen.team if isinstance(seen, Seen) else seen["team"])
        return {**data, "running": {k if "/" in k else f"{team(v)}/{k}": v for k, v in running.items()},
                "told": {k: v for k, v in told.items() if "/" in k}}

    def halved(self) -> "RunHistory | None":
        """This history made smaller, for a store that cannot hold it whole, cutting first what the estimates miss
        least, each step by half, so that any history comes down to an empty one: each team's run durations and
        declared ratios to their newest half, down to one each; the running workloads (by key: those left out are
        not measured when they finish); the first estimates (by key: those workloads' waits are not measured); the
        declared ratios, whole (one per team scales nothing: a team's declarations are read from MIN_SAMPLES on);
        the teams whose durations are kept (by name: the others draw from the cluster's); the oldest outcomes.
        None when nothing is left to cut."""
        def newest_half(by_team: dict[str, tuple[float, ...]]) -> dict[str, tuple[float, ...]]:
            return {t: d[len(d) // 2:] for t, d in by_team.items()}

        def first_half(keyed: dict[str, Any]) -> dict[str, Any]:
            keys = sorted(keyed)
            return {k: keyed[k] for k in keys[:len(keys) // 2]}

        if any(len(d) > 1 for d in (*self.finished.values(), *self.declared.values())):
            return self.model_copy(update={"finished": newest_half(self.finished),
                                           "declared": newest_half(self.declared)})
        if self.running:
            return self.model_copy(update={"running": first_half(self.running)})
        if self.told:
            return self.model_copy(update={"told": first_half(self.told)})
        if self.declared:
            return self.model_copy(update={"declared": {}})
        if self.finished:
            return self.model_copy(update={"finished": first_half(self.finished)})
        if self.outcomes:
            return self.model_copy(update={"outcomes": self.outcomes[(len(self.outcomes) + 1) // 2:]})
        return None
