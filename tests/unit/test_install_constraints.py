"""What a laptop install gets is what the tests ran: every requirement of the package and of its [tools] extra is
pinned in requirements/dev.lock (the constraints file the README's install passes to pip) at a version its range
admits, and the extra holds what the commands import (optuna for `recommend --search`)."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from rebalancer.errors import PermanentError
from rebalancer_tools.cli.extras import require

ROOT = Path(__file__).resolve().parents[2]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
LOCK = {canonicalize_name(name): version for name, _, version in
        (line.partition("==") for line in (ROOT / "requirements/dev.lock").read_text().splitlines())
        if version}
REQUIREMENTS = [Requirement(r) for r in (*PROJECT["dependencies"], *PROJECT["optional-dependencies"]["tools"])]


@pytest.mark.parametrize("requirement", REQUIREMENTS, ids=str)
def test_every_requirement_is_pinned_within_its_range(requirement: Requirement) -> None:
    pinned = LOCK.get(canonicalize_name(requirement.name))
    assert pinned is not None, f"{requirement.name} is not in requirements/dev.lock"
    assert requirement.specifier.contains(pinned, prereleases=True), (str(requirement), pinned)


def test_the_tools_extra_holds_what_the_commands_import() -> None:
    extra = {canonicalize_name(Requirement(r).name) for r in PROJECT["optional-dependencies"]["tools"]}
    assert {"click", "rich", "moto", "matplotlib", "optuna"} <= extra


def test_a_missing_optional_package_is_one_line() -> None:
    with pytest.raises(PermanentError) as e:
        require("no_such_package_for_this_test", "recommend --search")
    assert str(e.value) == ("`rebalancer recommend --search` needs the Python package 'no_such_package_for_this_test', "
                            "which the [tools] extra installs: pipx install 'hyperpod-rebalancer[tools]' (see README "
                            "\"Install on a laptop\")")
    require("json", "anything")  # present: nothing said
