"""What the plan step stores with each run for the teams' questions (`rebalancer why`, `/rebalancer why`): each
pending workload's estimated start (rebalancer.planning.eta) and each team's standing over the fair-share window
(rebalancer.planning.standing), so that the answer reads one stored document instead of computing within Slack's
three seconds. Also what the plan step carries from run to run to estimate durations: the workloads running as
last seen, and the run durations of those seen to finish (`RunHistory`)."""

from pydantic import AwareDatetime, Field, NonNegativeFloat

from rebalancer.domain.frozen import Frozen

DURATIONS_KEPT = 50  # per team, newest last (rebalancer.forecast.durations.KEPT says why)


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
    it was entitled to, its weighted share of what the teams that count received there (None: it does not count:
    no weight, or neither demand now nor use in the window)."""

    pool: str
    received_hours: NonNegativeFloat
    entitled_hours: NonNegativeFloat | None = None


class Standing(Frozen):
    window_hours: float
    pools: tuple[PoolStanding, ...] = ()
    budget: str | None = None  # `budget 92 % used (…)`, for a team with a budget


class Outlook(Frozen):
    taken_at: AwareDatetime
    estimates: tuple[WorkloadEta, ...] = ()
    standing: dict[str, Standing] = Field(default_factory=dict)
    notes: tuple[str, ...] = ()  # what the estimates rest on (finished runs seen, re-plans)


class Seen(Frozen):
    """A workload running as a run saw it: its team, since when, and when it was last seen running."""

    team: str
    started: AwareDatetime
    last_seen: AwareDatetime


class RunHistory(Frozen):
    running: dict[str, Seen] = Field(default_factory=dict)  # by workload name and pool (`name@pool`)
    finished: dict[str, tuple[float, ...]] = Field(default_factory=dict)  # team → run durations (s), newest last
