"""The bases of the domain's models: our value models (snapshot, policy, pools, plan, budget, samples) and the
AWS response shapes (the cluster's, the quotas')."""

from typing import Any

from pydantic import BaseModel, ConfigDict


class Frozen(BaseModel):
    """Immutable, so a value can be shared (a snapshot by the planner and the audit, a policy by every stage) and
    hashed; no field we do not know, so a typo in a policy or a stored document is an error and not a silently ignored
    key; finite numbers only, since JSON carries no NaN or infinity and an amount that became one is a bug to stop at
    the edge. A model that needs another config says why beside it."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)


class Written(Frozen):
    """A document an admin writes (the policy, its budgets): strict as well, so `min_step: false` or `weight: "2"`
    is refused as the published JSON schema refuses it, instead of being read as 0 and 2
    (tests/unit/policy/test_policy_schema.py holds the two together)."""

    model_config = ConfigDict(strict=True)


class AwsShape(BaseModel):
    """An AWS response shape: immutable, keeps fields we do not model, dumps without the Nones."""

    # Not Frozen: AWS adds response fields over time, which we keep (and write back on an update) rather than refuse.
    model_config = ConfigDict(frozen=True, extra="allow", allow_inf_nan=False)

    def to_api(self) -> dict[str, Any]:
        return self.model_dump(mode="json", exclude_none=True)
