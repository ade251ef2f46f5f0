"""What a laptop install gets is what the tests ran: on every supported Python (requires-python's oldest to the Lambda
runtime's), every requirement of the package and of its [tools] extra is pinned in requirements/dev.lock (the
constraints file the install passes to pip) exactly once, at a version its range admits, and the extra holds what the
commands import (optuna for `recommend --search`). A pin that needs a newer Python than the oldest carries an
environment marker, with the last version the older Pythons can have beside it."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name

from rebalancer.errors import PermanentError
from rebalancer_tools.cli.extras import require

ROOT = Path(__file__).resolve().parents[2]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
RUNTIME = re.search(r"Runtime: python(3\.\d+)", (ROOT / "template.yaml").read_text())
assert RUNTIME, "template.yaml names no python runtime"
PYTHONS = [f"3.{minor}" for minor in range(20) if SpecifierSet(PROJECT["requires-python"]).contains(f"3.{minor}")
           and (3, minor) <= tuple(map(int, RUNTIME.group(1).split(".")))]
LINES = [Requirement(line) for line in (ROOT / "requirements/dev.lock").read_text().splitlines() if line.strip()]
REQUIREMENTS = [Requirement(r) for r in (*PROJECT["dependencies"], *PROJECT["optional-dependencies"]["tools"])]


def lock_on(python: str) -> dict[str, str]:
    """dev.lock's pins that apply on that Python (each line's environment marker decides)."""
    pins: dict[str, str] = {}
    for line in LINES:
        if line.marker is None or line.marker.evaluate({"python_version": python}):
            name = canonicalize_name(line.name)
            assert name not in pins, f"dev.lock pins {name} twice for Python {python}"
            (spec,) = line.specifier
            assert spec.operator == "==", f"dev.lock: {line} is not pinned with =="
            pins[name] = spec.version
    return pins


def test_the_supported_pythons_run_from_requires_python_to_the_lambda_runtime() -> None:
    assert PYTHONS[0] == "3.11"
    assert PYTHONS[-1] == RUNTIME.group(1)


@pytest.mark.parametrize("python", PYTHONS)
def test_every_package_is_pinned_once_on_every_supported_python(python: str) -> None:
    assert set(lock_on(python)) == {canonicalize_name(line.name) for line in LINES}


@pytest.mark.parametrize("python", PYTHONS)
@pytest.mark.parametrize("requirement", REQUIREMENTS, ids=str)
def test_every_requirement_is_pinned_within_its_range(requirement: Requirement, python: str) -> None:
    pinned = lock_on(python).get(canonicalize_name(requirement.name))
    assert pinned is not None, f"{requirement.name} is not in requirements/dev.lock"
    assert requirement.specifier.contains(pinned, prereleases=True), (str(requirement), python, pinned)


def test_the_tools_extra_holds_what_the_commands_import() -> None:
    extra = {canonicalize_name(Requirement(r).name) for r in PROJECT["optional-dependencies"]["tools"]}
    assert {"click", "rich", "moto", "matplotlib", "optuna"} <= extra


def test_a_missing_optional_package_is_one_line() -> None:
    with pytest.raises(PermanentError) as e:
        require("no_such_package_for_this_test", "recommend --search")
    assert str(e.value) == ("`rebalancer recommend --search` needs the Python package 'no_such_package_for_this_test', "
                            "which the [tools] extra installs: from a checkout of hyperpod-rebalancer, pipx install "
                            "--force --pip-args \"-c requirements/dev.lock\" '.[tools]' (README \"Install on a "
                            "laptop\")")
    require("json", "anything")  # present: nothing said
