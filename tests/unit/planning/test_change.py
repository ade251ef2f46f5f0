"""Change is a validated dataclass inside a Plan model: it validates like the model it was, and dumps the same."""

from __future__ import annotations

import pytest
from pydantic import ValidationError
from support.clusters import T0

from rebalancer.domain.plan import Change, Plan

P5 = "ml.p5.48xlarge"


def change(**fields: object) -> Change:
    return Change(**{"team": "a", "instance_type": P5, "resource": "accelerators", "before": 8, "after": 16,
                     "reason": "demand 16 > allocation 8", **fields})  # type: ignore[arg-type]


def test_amounts_are_floats_and_bad_fields_are_refused() -> None:
    c = change()
    assert (repr(c.before), repr(c.after), c.delta, c.pool) == ("8.0", "16.0", 8.0, P5)
    with pytest.raises(ValidationError, match="resource"):
        change(resource="gpus")
    with pytest.raises(ValidationError, match="colour"):
        change(colour="red")


def test_model_dump_and_copy_behave_as_the_models_did() -> None:
    c = change()
    assert c.model_dump(mode="json", exclude_none=True) == {
        "team": "a", "instance_type": P5, "resource": "accelerators", "before": 8.0, "after": 16.0,
        "reason": "demand 16 > allocation 8"}
    assert c.model_dump()["mig_profile"] is None
    copied = c.model_copy(update={"reason": "x"})
    assert (copied.reason, copied.team, c.reason) == ("x", "a", "demand 16 > allocation 8")
    with pytest.raises(ValidationError):
        c.model_copy(update={"after": "lots"})


def test_a_plan_with_changes_reads_back_from_json() -> None:
    plan = Plan(cluster_name="c", cluster_arn="arn", taken_at=T0, mode="auto",
                changes=(change(), change(team="b", mig_profile="mig-1g.10gb", resource="partitions")))
    again = Plan.model_validate_json(plan.model_dump_json())
    assert again == plan
    assert again.changes[1].pool == f"{P5}:mig-1g.10gb"
    assert '"mig_profile":null' in plan.model_dump_json()
