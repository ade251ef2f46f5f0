"""What each class of the runtime package (or of the tools package) is made of: a pydantic model, a dataclass (frozen
and slotted, or slotted working state), a NamedTuple, or a plain class (with `__slots__` or without); exceptions,
Protocols, enums and TypedDicts are not records and are left out. Read from the imported classes, so a model that
inherits its base through another module counts as one. Counted per style:

    PYTHONPATH=<tree>/layers/core:<tree>/tools:tests python -m support.record_styles [--tools] [--list]
"""

from __future__ import annotations

import dataclasses
import enum
import importlib
import sys
from collections import Counter
from collections.abc import Iterable
from typing import Protocol, is_typeddict

from pydantic import BaseModel

from support.import_graph import MODULES, TOOLS_MODULES

PYDANTIC_MODEL = "pydantic model"
PYDANTIC_DATACLASS = "pydantic dataclass"
FROZEN_DATACLASS = "frozen slotted dataclass"
WORKING_DATACLASS = "slotted dataclass (mutable working state)"
UNSLOTTED_DATACLASS = "dataclass without slots"
NAMED_TUPLE = "NamedTuple"
SLOTTED_CLASS = "plain class with __slots__"
PLAIN_CLASS = "plain class"


def style(cls: type) -> str | None:
    """The class's style, or None when it is not a record of any kind (an exception, a Protocol, an enum)."""
    if issubclass(cls, BaseException | enum.Enum) or is_typeddict(cls) or getattr(cls, "_is_protocol", False):
        return None
    if issubclass(cls, BaseModel):
        return PYDANTIC_MODEL
    if dataclasses.is_dataclass(cls):
        if "__pydantic_fields__" in cls.__dict__:
            return PYDANTIC_DATACLASS
        if "__slots__" not in cls.__dict__:
            return UNSLOTTED_DATACLASS
        return FROZEN_DATACLASS if cls.__dataclass_params__.frozen else WORKING_DATACLASS  # type: ignore[attr-defined]
    if issubclass(cls, tuple) and hasattr(cls, "_fields"):
        return NAMED_TUPLE
    return SLOTTED_CLASS if "__slots__" in cls.__dict__ else PLAIN_CLASS


def classes(modules: Iterable[str] = MODULES) -> dict[str, type]:
    """Every class defined in one of the modules (default: the runtime's), by qualified name
    (`rebalancer.engine.allocation.Claim`). A `__main__` module is left out: importing it runs it."""
    found: dict[str, type] = {}
    for name in sorted(m for m in modules if not m.endswith(".__main__")):
        module = importlib.import_module(name)
        for value in vars(module).values():
            if isinstance(value, type) and value.__module__ == name and value is not Protocol:
                found[f"{name}.{value.__qualname__}"] = value
    return found


def styles(modules: Iterable[str] = MODULES) -> dict[str, str]:
    """Every class of the modules (default: the runtime's) that is a record of some kind, and its style."""
    return {name: s for name, cls in classes(modules).items() if (s := style(cls)) is not None}


if __name__ == "__main__":
    by_style = styles(TOOLS_MODULES if "--tools" in sys.argv else MODULES)
    for s, n in sorted(Counter(by_style.values()).items(), key=lambda kv: -kv[1]):
        print(f"{n:4d}  {s}")
    if "--list" in sys.argv:
        for name, s in sorted(by_style.items(), key=lambda kv: (kv[1], kv[0])):
            print(f"{s:45} {name}")
