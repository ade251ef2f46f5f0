"""Every figure and count the README, the help texts, the Makefile and the docs state about the tools is the code's
own: the demo's scenarios, the simulator's bench scenarios and strategies, the sandbox's cluster, the commands."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner

from rebalancer_tools.cli import COMMANDS, cli
from rebalancer_tools.demo.scenarios import SCENARIOS
from rebalancer_tools.emulator.demo import DEMO
from rebalancer_tools.simulator import STRATEGIES, bench

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()
MAKEFILE = (ROOT / "Makefile").read_text()
SIMULATION = (ROOT / "docs/simulation.md").read_text()
NUMBERS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9}


def help_of(*command: str) -> str:
    got = CliRunner().invoke(cli, [*command, "--help"], terminal_width=200)
    assert got.exit_code == 0, got.output
    return " ".join(got.output.split())


def test_the_demo_counts_its_scenarios() -> None:
    word = re.search(r"Run the (\w+) demo scenarios", help_of("demo"))
    assert word, help_of("demo")
    assert NUMBERS[word.group(1)] == len(SCENARIOS)
    quick_start = README[README.index("## Quick start"):README.index("## Install on a laptop")]
    assert re.findall(r"\((\d)\) ", quick_start) == [str(i + 1) for i in range(len(SCENARIOS))]


def test_the_simulator_bench_counts() -> None:
    line = next(line for line in MAKEFILE.splitlines() if line.startswith("bench-sim:"))
    counted = re.search(r"the (\w+) simulator scenarios .* × (\w+) strategies", line)
    assert counted, line
    scenarios, strategies = counted.groups()
    assert (NUMBERS[scenarios], NUMBERS[strategies]) == (len(bench.SCENARIOS), len(STRATEGIES))
    assert f"`make bench-sim` — {len(bench.SCENARIOS)} scenarios × {len(STRATEGIES)} strategies" in SIMULATION


def test_the_sandbox_cluster_as_the_readme_describes_it() -> None:
    groups = ", ".join(f"{g.instance_type} ×{g.count}" for g in DEMO.groups)
    assert f"({groups})" in " ".join(README.split()), groups
    assert f"`{DEMO.cluster_name}`" in README
    assert "five teams" in README
    assert len(DEMO.teams) == NUMBERS["five"]


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_command_is_in_the_readme(command: str) -> None:
    assert re.search(rf"`rebalancer {command}\b|^rebalancer {command}\b|\brebalancer {command} ", README, re.M), command


@pytest.mark.parametrize(("group", "sub"), [("emulator", s) for s in ("fail-node", "heal-node", "add-demand",
                                                                        "resize")]
                         + [("approvals", s) for s in ("list", "approve", "reject")] + [("policy", "init")])
def test_every_subcommand_the_readme_names_exists(group: str, sub: str) -> None:
    assert f"{sub}" in README
    assert help_of(group, sub)


def test_the_supported_pythons_are_the_projects_and_the_ones_ci_installs_on() -> None:
    requires = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"]
    oldest = requires.removeprefix(">=3.")
    assert f"Python 3.{oldest} to 3.13 (`requires-python {requires.replace('>=', '>= ')}`" in README
    assert re.search(rf"scripts/test_install.py {oldest} 13\b", (ROOT / "Makefile").read_text())
    assert "make test-install" in (ROOT / ".ci/run").read_text()
