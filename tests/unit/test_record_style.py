"""A record is a value. The runtime's records (and the tools') are frozen, slotted dataclasses, its working state
slotted mutable dataclasses, and pydantic models where a value crosses a boundary: no NamedTuple, no dataclass
without slots, no equality, repr or copy written by hand. And the records the engine passes around compare, hash and
copy as values."""

from __future__ import annotations

import ast
import dataclasses

from hypothesis import given
from hypothesis import strategies as st
from support.import_graph import TOOLS_MODULES, TOOLS_PACKAGE
from support.layer import RUNTIME
from support.props import properties
from support.record_styles import NAMED_TUPLE, UNSLOTTED_DATACLASS, styles

from rebalancer.adapters.collect import KubeSide
from rebalancer.engine.allocation import INF, Claim, Claims, PoolInput

# A value that is a tuple by nature (unpacked or indexed by its callers) would be listed here as a NamedTuple, with
# why; none is: mypy strict finds no record of the runtime unpacked, indexed or iterated.
TUPLES: dict[str, str] = {}
# Dataclasses that are not records: a service object, whose dataclass gives it a keyword constructor.
SERVICES = {"rebalancer.app.approvals.http.ApprovalApi": "the approval API: Approvals, the Slack signing secret"}
# The tools' dataclasses that are not records: services that set up what they hold open when they start.
TOOLS_SERVICES = {
    "rebalancer_tools.local.stack.LocalStack": "the local stack: moto's resources, the handlers, the patches it holds",
    "rebalancer_tools.iam.enforce.Enforcer": "moto's authorization hooked to the template's policies while entered",
}
BY_HAND = ("__eq__", "__ne__", "__hash__", "__repr__", "__copy__", "_replace")


def test_no_record_is_a_named_tuple_or_a_dataclass_without_slots() -> None:
    found = styles()
    assert len(found) > 150  # the finder sees the runtime's records
    assert [f"{name}: {s}" for name, s in found.items()
            if s in (NAMED_TUPLE, UNSLOTTED_DATACLASS) and name not in TUPLES and name not in SERVICES] == []


def test_no_tools_record_is_a_named_tuple_or_a_dataclass_without_slots() -> None:
    found = styles(TOOLS_MODULES)
    assert len(found) > 80  # the finder sees the tools' records
    assert [f"{name}: {s}" for name, s in found.items()
            if s in (NAMED_TUPLE, UNSLOTTED_DATACLASS) and name not in TOOLS_SERVICES] == []


def test_no_class_writes_its_equality_repr_or_copy_by_hand() -> None:
    found = []
    for root in (RUNTIME, TOOLS_PACKAGE):
        for path in sorted(root.rglob("*.py")):
            if "_assets" in path.relative_to(root).parts:
                continue
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.ClassDef):
                    found += [f"{path.relative_to(root)}::{node.name}.{f.name}" for f in node.body
                              if isinstance(f, ast.FunctionDef) and f.name in BY_HAND]
    assert found == []


amounts = st.floats(min_value=0, max_value=1e6, allow_nan=False)
claims = st.lists(st.builds(Claim, team=st.text(min_size=1, max_size=8), weight=amounts, guarantee=amounts,
                            cap=st.one_of(amounts, st.just(INF)), demand=amounts, current=amounts, in_use=amounts,
                            protected=st.booleans(), notes=st.lists(st.text(max_size=8), max_size=2).map(tuple)),
                  max_size=6)


@properties()
@given(claims, st.floats(min_value=0, max_value=1e6, allow_nan=False))
def test_a_pool_is_its_contents(rows: list[Claim], capacity: float) -> None:
    """Two pools of equal contents are equal and hash alike; a pool is not the tuple of its fields; its claims read
    back the rows they were made of; a copy with one column replaced changes that column alone."""
    a = PoolInput.of("ml.p5.48xlarge", "accelerators", capacity, rows)
    b = PoolInput.of("ml.p5.48xlarge", "accelerators", capacity, [dataclasses.replace(r) for r in rows])
    assert a == b
    assert hash(a) == hash(b)
    assert a != tuple(getattr(a, f.name) for f in dataclasses.fields(a))
    assert list(a.claims) == rows
    assert len(a.claims) == len(rows)
    noted = dataclasses.replace(a.claims, notes=tuple(("noted",) for _ in rows))
    assert noted.notes == tuple(("noted",) for _ in rows)
    assert all(getattr(noted, f.name) == getattr(a.claims, f.name) for f in dataclasses.fields(Claims)
               if f.name != "notes")
    assert dataclasses.replace(a, capacity=capacity + 1) != a


def test_the_kubernetes_side_not_read_is_the_empty_one() -> None:
    warnings: list[str] = []
    assert KubeSide.read(None, False, warnings) == KubeSide()
    assert warnings == ["Kueue not read: every team's demand is taken as zero"]
