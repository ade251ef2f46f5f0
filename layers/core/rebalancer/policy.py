"""The admin's policy: teams, weights, guarantees, caps, stability and approval rules.

Amounts are in the instance type's primary resource: accelerators (GPUs, Trainium devices) for accelerator types,
vCPUs for CPU-only types. A key `ml.p5.48xlarge:mig-1g.10gb` names a MIG pool, counted in partitions.
Validators raise ValueError so that pydantic reports the full path of the field; `validation.invalid_input` turns
that into one line naming the file, the field and the value.
"""

from __future__ import annotations

import re
from collections import defaultdict
from typing import Annotated, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    NonNegativeFloat,
    NonNegativeInt,
    field_validator,
    model_serializer,
    model_validator,
)

from rebalancer import catalog
from rebalancer.errors import UnknownInstanceType

TEAM_NAME = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
TEAM_NAME_MAX = 40
PERCENT = re.compile(r"\s*(\d+(?:\.\d+)?)\s*%\s*")


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class PoolKey(Frozen):
    """One allocatable pool: an instance type's primary resource, or one MIG profile on it."""

    instance_type: str
    mig_profile: str | None = None

    @classmethod
    def parse(cls, key: str) -> PoolKey:
        """Raises ValueError naming the key when the type or the MIG profile is unknown."""
        instance_type, _, profile = key.partition(":")
        try:
            spec = catalog.spec(instance_type)
        except UnknownInstanceType as e:
            raise ValueError(str(e)) from None
        if profile:
            if profile not in spec.mig_profiles:
                raise ValueError(f"{profile!r} is not a MIG profile of {instance_type} (it supports: "
                                 f"{', '.join(spec.mig_profiles) or 'none'})")
            return cls(instance_type=instance_type, mig_profile=profile)
        return cls(instance_type=instance_type)

    @property
    def resource(self) -> str:
        if self.mig_profile:
            return "partitions"
        return catalog.spec(self.instance_type).primary_resource

    def __str__(self) -> str:
        return f"{self.instance_type}:{self.mig_profile}" if self.mig_profile else self.instance_type


class Amount(Frozen):
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

    def resolve(self, capacity: float) -> float:
        return capacity * self.value / 100 if self.percent else self.value

    def __str__(self) -> str:
        return f"{self.value:g}%" if self.percent else f"{self.value:g}"


class TeamPolicy(Frozen):
    weight: NonNegativeFloat = 1.0
    guarantee: dict[str, Amount] = Field(default_factory=dict)
    cap: dict[str, Amount] = Field(default_factory=dict)
    protected_in_use: bool = False

    @field_validator("guarantee", "cap")
    @classmethod
    def _known_pools(cls, amounts: dict[str, Amount]) -> dict[str, Amount]:
        for key in amounts:
            PoolKey.parse(key)
        return amounts

    @model_validator(mode="after")
    def _guarantee_within_cap(self) -> TeamPolicy:
        for key, g in self.guarantee.items():
            c = self.cap.get(key)
            if c is not None and c.percent == g.percent and g.value > c.value:
                raise ValueError(f"guarantee.{key} = {g} is above cap.{key} = {c}")
        return self

    def guarantee_for(self, pool: str, capacity: float) -> float:
        a = self.guarantee.get(pool)
        return a.resolve(capacity) if a else 0.0

    def cap_for(self, pool: str, capacity: float) -> float:
        a = self.cap.get(pool)
        return a.resolve(capacity) if a else float("inf")


class Stability(Frozen):
    min_step: NonNegativeInt = 1
    cooldown_minutes: NonNegativeFloat = 30
    max_move: NonNegativeInt | None = 64


class Approval(Frozen):
    moved_accelerators: NonNegativeInt = 16
    max_decrease_percent: Annotated[float, Field(ge=0, le=100)] = 50
    timeout_minutes: Annotated[int, Field(ge=1, le=7 * 24 * 60)] = 60


class Policy(Frozen):
    mode: Literal["auto", "approve", "dry-run"] = "auto"
    surplus: Literal["idle", "spread"] = "idle"
    stability: Stability = Field(default_factory=Stability)
    approval: Approval = Field(default_factory=Approval)
    teams: dict[str, TeamPolicy]

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
    def _percent_guarantees_fit(self) -> Policy:
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
        return {k for t in self.teams.values() for k in (*t.guarantee, *t.cap)}
