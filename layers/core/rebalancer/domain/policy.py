"""The admin's policy: teams, weights, guarantees, caps, stability and approval rules.

Amounts are in the instance type's primary resource: accelerators (GPUs, Trainium devices) for accelerator types,
vCPUs for CPU-only types. A key `ml.p5.48xlarge:mig-1g.10gb` names a MIG pool, counted in partitions. A key may also
name an instance family (`ml.p5`): a family cap bounds the team's sum over the family's types in the cluster
(rebalancer.engine.family_caps), a family guarantee is placed where the team's demand is (planning.pools).
Besides allocations the policy states the rest of task governance: per team, explicit vCPU / memory, sharing
(strategy, borrow limits, fair-share weight, preemption) and `remove`; per cluster, the scheduler config.
Validators raise ValueError so that pydantic reports the full path of the field; `validation.invalid_input` turns
that into one line naming the file, the field and the value.
"""

import re
from collections import defaultdict
from typing import Annotated, Any, Literal

from pydantic import (
    Field,
    GetJsonSchemaHandler,
    NonNegativeFloat,
    NonNegativeInt,
    field_validator,
    model_serializer,
    model_validator,
)
from pydantic.json_schema import JsonSchemaValue

from rebalancer.catalog import specs as catalog
from rebalancer.domain.budget import Budget
from rebalancer.domain.frozen import Written
from rebalancer.domain.pools import PoolKey

TEAM_NAME = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
TEAM_NAME_MAX = 40
# A weight is 0 (the floor only) or within six orders of magnitude either side of 1: the water level is capacity ÷
# weight, and a subnormal weight makes it infinite.
MIN_WEIGHT, MAX_WEIGHT = 1e-6, 1e6
PERCENT = re.compile(r"\s*(\d+(?:\.\d+)?)\s*%\s*")
PERCENT_SCHEMA_PATTERN = r"^\s*0*(\d{1,2}(\.\d+)?|100(\.0+)?)\s*%\s*$"  # PERCENT, at most 100


class Amount(Written):
    """An absolute amount, or a percent of the pool's healthy capacity. Written as `8` or `"25%"`."""

    value: NonNegativeFloat
    percent: bool = False

    @model_validator(mode="before")
    @classmethod
    def _parse(cls, raw: object) -> object:
        if isinstance(raw, dict | Amount):
            return raw
        if isinstance(raw, bool):
            raise ValueError(f"expected a number or a percent like '25%', got {raw!r}")
        if isinstance(raw, int | float):
            if raw < 0:
                raise ValueError(f"must not be negative, got {raw!r}")
            return {"value": float(raw)}
        if isinstance(raw, str) and (m := PERCENT.fullmatch(raw)):
            pct = float(m.group(1))
            if pct > 100:
                raise ValueError(f"a percent of a type's capacity cannot exceed 100%, got {raw!r}")
            return {"value": pct, "percent": True}
        raise ValueError(f"expected a number or a percent like '25%', got {raw!r}")

    @model_serializer
    def _dump(self) -> float | str:
        return f"{self.value:g}%" if self.percent else self.value

    @classmethod
    def __get_pydantic_json_schema__(cls, core_schema: Any, handler: GetJsonSchemaHandler) -> JsonSchemaValue:
        # As written in a policy file (what `_parse` takes), not the model's internal fields.
        return {"anyOf": [{"type": "number", "minimum": 0},
                          {"type": "string", "pattern": PERCENT_SCHEMA_PATTERN}, handler(core_schema)],
                "description": "an absolute amount (8) or a percent of the pool's healthy capacity ('25%')"}

    def resolve(self, capacity: float) -> float:
        return capacity * self.value / 100 if self.percent else self.value

    def __str__(self) -> str:
        return f"{self.value:g}%" if self.percent else f"{self.value:g}"


def family_types(key: str) -> tuple[str, ...]:
    """The known types of family `key` (`ml.p5` → ml.p5.48xlarge, ml.p5e.48xlarge, …), or () when `key` is not a
    family (an instance type, a MIG pool, or nothing known)."""
    if ":" in key or key in catalog.known_types():
        return ()
    return catalog.types_in_family(key)


def _check_pool_or_family(key: str) -> None:
    if family_types(key):
        return
    try:
        PoolKey.parse(key)
    except ValueError:
        if ":" not in key and key.count(".") == 1:
            raise ValueError(f"{key!r} is neither an instance type nor an instance family") from None
        raise


BORROW_LIMIT_MIN, BORROW_LIMIT_MAX = 1, 500


class Sharing(Written):
    """How the team lends and borrows idle compute: ComputeQuotaConfig.ResourceSharingConfig as the API takes it.
    `absolute_borrow_limits` are per instance type, in the type's primary unit (accelerators or vCPUs)."""

    strategy: Literal["Lend", "DontLend", "LendAndBorrow"]
    borrow_limit: int | None = None  # percent of idle compute the team may borrow
    absolute_borrow_limits: dict[str, Annotated[int, Field(ge=0)]] | None = None

    @field_validator("borrow_limit")
    @classmethod
    def _borrow_limit_range(cls, limit: int | None) -> int | None:
        # The API reference (ResourceSharingConfig.BorrowLimit): "The values can be 1 - 500 percent of idle compute
        # that the team is allowed to borrow"; the model's syntactic range (0-10000) is wider than what it means.
        if limit is not None and not BORROW_LIMIT_MIN <= limit <= BORROW_LIMIT_MAX:
            raise ValueError(f"borrow_limit is {BORROW_LIMIT_MIN}-{BORROW_LIMIT_MAX} (percent of idle compute the "
                             f"team may borrow, as the SageMaker API reference documents BorrowLimit), got {limit}")
        return limit

    @field_validator("absolute_borrow_limits")
    @classmethod
    def _borrow_types(cls, limits: dict[str, int] | None) -> dict[str, int] | None:
        for key in limits or {}:
            if ":" in key:
                raise ValueError(f"absolute_borrow_limits take instance types, not MIG pools: {key!r}")
            PoolKey.parse(key)
        if limits is not None and len(limits) > 15:
            raise ValueError(f"at most 15 absolute borrow limits, got {len(limits)}")
        return limits

    @model_validator(mode="after")
    def _borrowing_needs_borrow(self) -> "Sharing":
        if self.strategy != "LendAndBorrow":
            for name in ("borrow_limit", "absolute_borrow_limits"):
                if getattr(self, name) is not None:
                    raise ValueError(f"{name} needs strategy LendAndBorrow, not {self.strategy}")
        return self

    def to_api(self) -> dict[str, Any]:
        out: dict[str, Any] = {"Strategy": self.strategy}
        if self.borrow_limit is not None:
            out["BorrowLimit"] = self.borrow_limit
        if self.absolute_borrow_limits is not None:
            out["AbsoluteBorrowLimits"] = [_primary_entry(t, n) for t, n in sorted(self.absolute_borrow_limits.items())]
        return out


def _primary_entry(instance_type: str, amount: int) -> dict[str, Any]:
    if catalog.spec(instance_type).accelerators:
        return {"InstanceType": instance_type, "Accelerators": amount}
    return {"InstanceType": instance_type, "VCpu": float(amount)}


SNS_TOPIC_ARN = r"^arn:aws[a-z-]*:sns:[a-z0-9-]+:\d{12}:[A-Za-z0-9_-]{1,256}$"


class TeamPolicy(Written):
    weight: Annotated[float, Field(ge=0, le=MAX_WEIGHT)] = 1.0
    guarantee: dict[str, Amount] = Field(default_factory=dict)
    cap: dict[str, Amount] = Field(default_factory=dict)
    protected_in_use: bool = False
    # Explicit vCPU / GiB of memory per accelerator type (absolute, or percent of the type's healthy total). A type
    # left out gets SageMaker's ratio rule. CPU-only types are allocated in vCPU (guarantee / cap), memory follows.
    vcpu: dict[str, Amount] = Field(default_factory=dict)
    memory_gib: dict[str, Amount] = Field(default_factory=dict)
    sharing: Sharing | None = None  # None: a new quota gets LendAndBorrow 50 %, an existing one keeps its own
    fair_share_weight: Annotated[int, Field(ge=0, le=100)] | None = None  # None: `weight` rounded into 0-100
    preempt_team_tasks: Literal["Never", "LowerPriority"] | None = None
    remove: bool = False  # deactivate the team's quota (ActivationState Disabled); it is never deleted
    # A team without a quota whose name is close to an existing team's is refused as a likely typo (a quota's team
    # name can never be changed), unless marked new here (rebalancer.planning.team_names).
    new: bool = False
    budget: Budget | None = None  # accelerator-hours or money per period; see rebalancer.domain.budget
    # Where the team is told, besides the controller's own outlets, before a plan preempts its running work (an SNS
    # topic's ARN; the stack may publish only to topics named with its TeamTopicPrefix).
    notice_topic: Annotated[str, Field(pattern=SNS_TOPIC_ARN, max_length=256)] | None = None

    @field_validator("weight")
    @classmethod
    def _weight(cls, weight: float) -> float:
        if 0 < weight < MIN_WEIGHT:
            raise ValueError(f"a weight is 0 or at least {MIN_WEIGHT:g} (got {weight:g})")
        return weight

    @field_validator("guarantee", "cap")
    @classmethod
    def _known_pools(cls, amounts: dict[str, Amount]) -> dict[str, Amount]:
        for key in amounts:
            _check_pool_or_family(key)
        return amounts

    @field_validator("vcpu", "memory_gib")
    @classmethod
    def _accelerator_types(cls, amounts: dict[str, Amount]) -> dict[str, Amount]:
        for key in amounts:
            s = catalog.spec(PoolKey.parse(key).instance_type)
            if ":" in key:
                raise ValueError(f"{key!r}: give vCPU and memory per instance type, not per MIG profile")
            if not s.accelerators:
                raise ValueError(f"{key} is a CPU-only type: it is allocated in vCPU through guarantee and cap, "
                                 "and its memory follows")
        return amounts

    @model_validator(mode="after")
    def _restorable_sharing(self) -> "TeamPolicy":
        if self.budget is not None and self.budget.on_exhausted == "no_borrowing" and self.sharing is None:
            raise ValueError("budget.on_exhausted: no_borrowing needs the team's sharing in the policy, so that "
                             "borrowing comes back when the next period starts")
        return self

    @model_validator(mode="after")
    def _guarantee_within_cap(self) -> "TeamPolicy":
        for key, g in self.guarantee.items():
            c = self.cap.get(key)
            if c is not None and c.percent == g.percent and g.value > c.value:
                raise ValueError(f"guarantee.{key} = {g} is above cap.{key} = {c}")
        return self

    @model_validator(mode="after")
    def _family_or_types(self) -> "TeamPolicy":
        named = [(f"{field}.{key}", key) for field in ("guarantee", "cap") for key in getattr(self, field)]
        for where, key in named:
            members = set(family_types(key))
            if not members:
                continue
            for other_where, other in named:
                if other == key:
                    continue
                if other.partition(":")[0] in members:
                    raise ValueError(f"{where} names the family {key} and {other_where} one of its types: "
                                     "use either the family or its types")
                if members & set(family_types(other)):
                    raise ValueError(f"{where} and {other_where} name overlapping families: use one of them")
        return self

    def guarantee_for(self, pool: str, capacity: float) -> float:
        a = self.guarantee.get(pool)
        return a.resolve(capacity) if a else 0.0

    def cap_for(self, pool: str, capacity: float) -> float:
        a = self.cap.get(pool)
        return a.resolve(capacity) if a else float("inf")


class Stability(Written):
    min_step: NonNegativeInt = 1
    cooldown_minutes: NonNegativeFloat = 30
    max_move: NonNegativeInt | None = 64


class Fairness(Written):
    """Time-aware fairness. `age_doubling_hours`: a team's weight in a pool is multiplied by 1 + a / H, where a is
    how long its oldest pending work there has waited and H this setting (the weight doubles once that work has
    waited H hours), so teams whose work waited longest are served first; None (the default): weights as written.
    Under sustained overload waits grow without bound and the allocation tends to serve teams oldest-work-first
    (first come, first served across teams); while waits stay short it is plain weighted fair share.
    `window_hours`: time-based fair share over a trailing window of that many hours (KAI's and Run:ai's default is
    168, a week): a team's weight in a pool is scaled by how much of the pool's metered accelerator-hours it
    received over the window against its weighted share (rebalancer.planning.fair_share), so a team served less
    than its share is served ahead of the others until the window evens out; None (the default): off.
    `window_form`: how that use scales the weight: "exponential" (the default), 2^(1 − u/s) with s the team's share
    of the weights and u its share of the hours received, or "kai", KAI's max(s + k·(s − U), 0) normalised over the
    teams, with U the hours received ÷ the pool's accelerator-hours over the window and k `window_k`; both bounded
    to [1/8, 8] (rebalancer.planning.fair_share)."""

    age_doubling_hours: Annotated[float, Field(gt=0, allow_inf_nan=False)] | None = None
    window_hours: Annotated[float, Field(gt=0, le=24 * 92, allow_inf_nan=False)] | None = None
    window_form: Literal["exponential", "kai"] = "exponential"
    window_k: Annotated[float, Field(ge=0, le=100, allow_inf_nan=False)] = 1.0
    # Quota in gang-sized steps: a team whose share lies between what it runs plus whole pending workloads (in
    # admission order) is moved to one of those amounts, up when the next gang is the nearer and the others can
    # give it, down otherwise (the rest left with the others this run). Guarantees and caps stay exact.
    gang_steps: bool = False


class Approval(Written):
    moved_accelerators: NonNegativeInt = 16
    max_decrease_percent: Annotated[float, Field(ge=0, le=100)] = 50
    timeout_minutes: Annotated[int, Field(ge=1, le=7 * 24 * 60)] = 60
    # A plan that replaces an edit made outside the rebalancer (in the console) needs approval.
    console_edits: bool = True
    # A plan that creates a quota for a team that has none needs approval: the name it is created under is permanent.
    new_teams: bool = True
    # An approved plan older than this is made again on the cluster as it is before anything is written, even when
    # nothing it was made from has moved (docs/deploy/approvals.md).
    max_plan_age_minutes: Annotated[int, Field(ge=1, le=7 * 24 * 60)] = 60
    # A plan whose writes would make Kueue preempt running work worth more than this many GPU-hours (accelerators ×
    # how long each has run: rebalancer.planning.preemptions) needs approval. None (the default): no such rule, as
    # HyperPod's own sharing reclaims borrowed work without asking; 0: every plan that preempts anything.
    max_preempted_gpu_hours: Annotated[float, Field(ge=0, allow_inf_nan=False)] | None = None


PRIORITY_CLASS_NAME = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")


class PriorityClass(Written):
    name: str
    weight: Annotated[int, Field(ge=0, le=100)]

    @field_validator("name")
    @classmethod
    def _name(cls, name: str) -> str:
        if len(name) > 41 or not PRIORITY_CLASS_NAME.fullmatch(name):
            raise ValueError(f"priority class name {name!r}: lowercase letters, digits and '-', starting and ending "
                             "with a letter or digit, at most 41 characters")
        return name


OnOff = Literal["Enabled", "Disabled"]


class Autoscaling(Written):
    """What the cluster's autoscaler can reach: at most `max_nodes` nodes per instance type. Read only when
    DescribeCluster says AutoScaling is on, and only where Karpenter NodePool limits could not be read."""

    max_nodes: dict[str, NonNegativeInt] = Field(default_factory=dict)

    @field_validator("max_nodes")
    @classmethod
    def _types(cls, max_nodes: dict[str, int]) -> dict[str, int]:
        unknown = sorted(k for k in max_nodes if k not in catalog.known_types())
        if unknown:
            raise ValueError(f"autoscaling.max_nodes is per instance type; {unknown[0]!r} is not one")
        return max_nodes


class ClusterPolicy(Written):
    """The cluster's scheduler config (Create/UpdateClusterSchedulerConfig). A field left out is not managed.
    `autoscaling` is no scheduler-config field: a policy stating only it manages no scheduler config."""

    priority_classes: Annotated[tuple[PriorityClass, ...], Field(max_length=10, strict=False)] | None = None
    fair_share: OnOff | None = None
    idle_resource_sharing: OnOff | None = None
    autoscaling: Autoscaling | None = None

    @property
    def manages_scheduler_config(self) -> bool:
        stated = (self.priority_classes, self.fair_share, self.idle_resource_sharing)
        return self.autoscaling is None or any(v is not None for v in stated)

    @field_validator("priority_classes")
    @classmethod
    def _unique(cls, classes: tuple[PriorityClass, ...] | None) -> tuple[PriorityClass, ...] | None:
        names = [c.name for c in classes or ()]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"priority class names must be unique: {', '.join(dupes)} repeated")
        return classes

    def to_api(self) -> dict[str, Any]:
        """The SchedulerConfig fields this policy manages."""
        out: dict[str, Any] = {}
        if self.priority_classes is not None:
            out["PriorityClasses"] = [{"Name": c.name, "Weight": c.weight} for c in self.priority_classes]
        if self.fair_share is not None:
            out["FairShare"] = self.fair_share
        if self.idle_resource_sharing is not None:
            out["IdleResourceSharing"] = self.idle_resource_sharing
        return out


class CapacityPolicy(Written):
    """What counts as capacity (rebalancer.planning.capacity). `guarantees_on_spot`: spot capacity may carry
    guarantees (default no: it can be reclaimed at any time; it is still shared by weight).
    `unavailable_grace_minutes`: how long a node HyperPod is working on (SystemUpdating, DeepHealthCheckInProgress,
    attach / detach, labelled Unschedulable) keeps counting before quotas shrink for it.
    `repair_grace_minutes`: how long a node HyperPod is repairing or replacing (labelled
    UnschedulablePendingReplacement / UnschedulablePendingReboot while its instance runs) keeps counting, so that a
    failure followed by its repair does not cut quotas and grow them back (0, the default: it stops counting at once;
    docs/simulation.md "Capacity under repair" has what 240 wins with long repairs and loses with short ones).
    `run_interval_minutes`: how far ahead capacity that will go (a training plan's end) is taken away: the
    stack's ScheduleRate, the longest a plan stands before the next one."""

    guarantees_on_spot: bool = False
    unavailable_grace_minutes: Annotated[float, Field(ge=0, le=24 * 60, allow_inf_nan=False)] = 60
    repair_grace_minutes: Annotated[float, Field(ge=0, le=24 * 60, allow_inf_nan=False)] = 0
    run_interval_minutes: Annotated[float, Field(gt=0, le=24 * 60, allow_inf_nan=False)] = 15


class Reclaim(Written):
    """Reclaim to fair share at a bounded cost (rebalancer.engine.stability, the `reclaim` rule): when a team waits
    below its fair share, a team running above its own may be planned below what it runs (even when
    `protected_in_use`), by the work Kueue would reclaim first, the newest admitted, and only while that work was
    admitted less than `max_age_minutes` ago; at most `max_gpu_hours` of run time (accelerators × time run so far)
    is put at risk per plan, and no team is cut below its fair share to serve another. `max_gpu_hours` 0: off.
    `notice_minutes`: how long the teams whose running work a plan would preempt are told before the write (the run
    tells them, waits, then checks the plan again and writes only what the notice named:
    rebalancer.app.workflow.notice). 0 (the default): told just before the write, as HyperPod's own sharing reclaims
    without notice; a notice delays by as much the team waiting for its share.
    The defaults: work admitted since the last run (the stack's 15-minute ScheduleRate) is the work that refilled a
    busy team's quota since that run's plan; 16 GPU-hours is `stability.max_move`'s 64 accelerators of such work at
    its oldest (docs/simulation.md "Reclaim to fair share" has the figures)."""

    max_age_minutes: Annotated[float, Field(ge=0, le=7 * 24 * 60, allow_inf_nan=False)] = 15
    max_gpu_hours: Annotated[float, Field(ge=0, le=10_000, allow_inf_nan=False)] = 16
    notice_minutes: Annotated[float, Field(ge=0, le=24 * 60, allow_inf_nan=False)] = 0


class Policy(Written):
    mode: Literal["auto", "approve", "dry-run"] = "auto"
    surplus: Literal["idle", "spread"] = "idle"
    stability: Stability = Field(default_factory=Stability)
    fairness: Fairness = Field(default_factory=Fairness)
    approval: Approval = Field(default_factory=Approval)
    teams: dict[str, TeamPolicy]
    cluster: ClusterPolicy | None = None  # the cluster's scheduler config; None: not managed by the policy
    capacity: CapacityPolicy = Field(default_factory=CapacityPolicy)
    reclaim: Reclaim = Field(default_factory=Reclaim)
    # Price per instance-hour by instance type, for money budgets (in the budgets' currency). No defaults are shipped:
    # prices differ by region, contract and date; a type used in a money budget's scope without a price is reported.
    prices: dict[str, Annotated[float, Field(gt=0, allow_inf_nan=False)]] = Field(default_factory=dict)

    @field_validator("prices")
    @classmethod
    def _priced_types(cls, prices: dict[str, float]) -> dict[str, float]:
        unknown = sorted(k for k in prices if k not in catalog.known_types())
        if unknown:
            raise ValueError(f"prices are per instance type; {unknown[0]!r} is not one")
        return prices

    @field_validator("teams")
    @classmethod
    def _team_names(cls, teams: dict[str, TeamPolicy]) -> dict[str, TeamPolicy]:
        for name in teams:
            if len(name) > TEAM_NAME_MAX or not TEAM_NAME.fullmatch(name):
                raise ValueError(
                    f"team name {name!r} would be rejected by HyperPod: lowercase letters, digits and '-', "
                    f"starting and ending with a letter or digit, at most {TEAM_NAME_MAX} characters")
        return teams

    @model_validator(mode="after")
    def _percent_guarantees_fit(self) -> "Policy":
        total: dict[str, float] = defaultdict(float)
        for team in self.teams.values():
            for key, amount in team.guarantee.items():
                if amount.percent:
                    total[key] += amount.value
        for key, pct in total.items():
            if pct > 100 + 1e-9:
                raise ValueError(f"percent guarantees for {key} add up to {pct:g}%, above 100%")
        return self

    def pools(self) -> set[str]:
        """Every guarantee and cap key (instance types, MIG pools and families)."""
        return {k for t in self.teams.values() for k in (*t.guarantee, *t.cap)}

    def active_teams(self) -> list[str]:
        """Teams that share capacity, sorted: every team but those marked `remove`."""
        return sorted(t for t, tp in self.teams.items() if not tp.remove)
