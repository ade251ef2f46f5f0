"""What a plan was made from (its basis), stored beside the run's plan: per pool the healthy capacity it counted,
per instance type the autoscaler's reach where the quotas may go above today's nodes, each quota's version, the
scheduler config's version, and the demand it planned for. A write made long after the plan (after an approval)
compares it with the cluster read again (rebalancer.planning.staleness), as Terraform refuses a saved plan whose
state moved; the writers read `ceilings` for the capacity guard (rebalancer.domain.healthy). Kept apart from the
plan itself, which says what to change, not what it was read from."""

from pydantic import AwareDatetime, Field, NonNegativeFloat

from rebalancer.domain.frozen import Frozen


class PlanBasis(Frozen):
    taken_at: AwareDatetime  # when the cluster was read; the plan's age counts from here
    # per pool (an instance type, or `type:profile`), its healthy capacity now in the pool's unit, as the plan counted
    capacity: dict[str, NonNegativeFloat] = Field(default_factory=dict)
    # per pool, what the enabled quotas held in all (teams outside the policy too), in the pool's unit
    held: dict[str, NonNegativeFloat] = Field(default_factory=dict)
    # per instance type on an autoscaled cluster, what the quotas may reach (its primary unit), above `capacity`
    ceilings: dict[str, NonNegativeFloat] = Field(default_factory=dict)
    quota_versions: dict[str, int] = Field(default_factory=dict)  # per team
    scheduler_version: int | None = None  # None: the cluster had no scheduler config (or it was not read)
    # team → pool → what it runs plus what waits, in the pool's unit (teams and pools without demand left out)
    demand: dict[str, dict[str, NonNegativeFloat]] = Field(default_factory=dict)
