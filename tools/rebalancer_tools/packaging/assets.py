"""The files the tools read besides their code: template.yaml, the state machine, the handlers, the sample events,
the example policies. They ship inside the package (`rebalancer_tools/_assets/`, in a checkout symlinks to the
checkout's own files), so `rebalancer demo` and the sandbox run from an installed wheel as from a checkout."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def root() -> Path:
    """The folder holding template.yaml, statemachines/, functions/, events/ and examples/."""
    from rebalancer_tools.packaging.template import find_root

    return find_root()


def template() -> dict[str, Any]:
    from rebalancer_tools.packaging.template import load_template

    return load_template(root())
