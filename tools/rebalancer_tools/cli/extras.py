"""Optional packages a command needs: a command whose package is missing says so in one line, naming the extra
that installs it, instead of a traceback at the first import."""

from __future__ import annotations

import importlib.util

from rebalancer.errors import PermanentError
from rebalancer_tools.entry import INSTALL


def require(module: str, command: str) -> None:
    """Refuses `command` in one line when `module` cannot be imported."""
    if importlib.util.find_spec(module) is None:
        raise PermanentError(f"`rebalancer {command}` needs the Python package {module!r}, which the [tools] extra "
                             f"installs: {INSTALL}")
