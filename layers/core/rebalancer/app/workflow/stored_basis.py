"""A run's stored basis (rebalancer.domain.basis: what its plan was made from), read back by the recheck and the
writing use cases; apart from `state`, which every handler loads, because only those read it."""

from rebalancer.app.workflow.state import Artifacts, RunRef
from rebalancer.domain.basis import PlanBasis


def load_basis(artifacts: Artifacts, run: RunRef) -> PlanBasis | None:
    """What the run's plan was made from; None for a plan stored without it."""
    doc = artifacts.get(run.execution_name, "BASIS")
    return None if doc is None else PlanBasis.model_validate(doc)


def ceilings(artifacts: Artifacts, run: RunRef) -> dict[str, float]:
    """Per instance type, what the autoscaler lets the run's quotas reach (the capacity guard's limits)."""
    basis = load_basis(artifacts, run)
    return dict(basis.ceilings) if basis else {}
