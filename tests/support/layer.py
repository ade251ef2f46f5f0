"""What the Lambda layer may hold: the distributions its requirements file pins, with their dependencies (markers
evaluated for the Lambda runtime), resolved against the installed environment."""

from __future__ import annotations

import importlib.metadata as md
import sys
from pathlib import Path

from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]
RUNTIME = ROOT / "layers" / "core" / "rebalancer"
REQUIREMENTS = ROOT / "layers" / "core" / "requirements.txt"
FUNCTIONS = ROOT / "functions"


def requirements() -> list[Requirement]:
    lines = (line.split("#", 1)[0].strip() for line in REQUIREMENTS.read_text().splitlines())
    return [Requirement(line) for line in lines if line]


def closure() -> dict[str, md.Distribution]:
    """Canonical name → installed distribution, for every distribution the layer's requirements pull in."""
    env = {**default_environment(), "python_version": "3.13", "sys_platform": "linux", "platform_system": "Linux"}
    found: dict[str, md.Distribution] = {}
    todo = [(r, frozenset(r.extras)) for r in requirements()]
    while todo:
        req, extras = todo.pop()
        name = canonicalize_name(req.name)
        dist = md.distribution(req.name)
        if name in found and not extras:
            continue
        found[name] = dist
        for dep in (Requirement(s) for s in dist.requires or []):
            wanted = not dep.marker or any(dep.marker.evaluate({**env, "extra": e}) for e in (extras or {""}))
            if wanted:
                todo.append((dep, frozenset(dep.extras)))
    return found


def top_level_modules(dists: dict[str, md.Distribution]) -> set[str]:
    """Import names those distributions provide."""
    provided = md.packages_distributions()
    return {top for top, names in provided.items() if any(canonicalize_name(n) in dists for n in names)}


def is_stdlib(name: str) -> bool:
    return name in sys.stdlib_module_names
