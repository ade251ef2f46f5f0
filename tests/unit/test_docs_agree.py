"""Every figure and count the README, the docs site, the help texts and the Makefile state about the tools is the
code's own: the demo's scenarios, the simulator's bench scenarios and strategies, the sandbox's cluster, the commands,
the holds in their order, the template's parameters, what `why` reads, the supported Pythons, every policy field and
the approval rules' defaults, the bounds of approval rounds, of reservations and of the CLI's lock."""

from __future__ import annotations

import re
import shlex
import tomllib
from datetime import timedelta

import pytest
import yaml
from click.testing import CliRunner
from support import docs
from support.layer_build import build_layer
from support.template import template

from rebalancer.app.reservations import ATTEMPTS as RESERVE_ATTEMPTS
from rebalancer.app.why import READ_MAX as SLACK_READ_MAX
from rebalancer.app.workflow.recheck import MAX_APPROVAL_ROUNDS
from rebalancer.domain.policy import Approval, Policy
from rebalancer.engine.stability import RULES
from rebalancer.planning.reservations import AHEAD_MAX, SETTLE_MINUTES
from rebalancer_tools.cli import COMMANDS, cli
from rebalancer_tools.cli.cluster_lock import HEARTBEAT_EVERY, LEASE
from rebalancer_tools.cli.why_cmd import READ_MAX as CLI_READ_MAX
from rebalancer_tools.demo.scenarios import SCENARIOS
from rebalancer_tools.emulator.demo_cluster import DEMO
from rebalancer_tools.simulator import STRATEGIES, bench

ROOT = docs.ROOT
README = docs.page("README.md")
ALL = docs.text()
MAKEFILE = (ROOT / "Makefile").read_text()
SIMULATION = docs.page("simulation.md")
NUMBERS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9,
           "ten": 10, "eleven": 11, "twelve": 12}


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


@pytest.mark.parametrize("name", ["README.md", "cli/emulator.md"])
def test_the_sandbox_cluster_as_the_docs_describe_it(name: str) -> None:
    text = docs.flat(docs.page(name))
    groups = ", ".join(f"{g.instance_type} ×{g.count}" for g in DEMO.groups)
    assert f"`{DEMO.cluster_name}` ({groups})" in text, groups
    assert "five teams" in text
    assert len(DEMO.teams) == NUMBERS["five"]


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_command_is_in_the_docs(command: str) -> None:
    assert re.search(rf"`rebalancer {command}\b|^rebalancer {command}\b|\brebalancer {command} ", ALL, re.M), command


@pytest.mark.parametrize(("group", "sub"), [("emulator", s) for s in ("fail-node", "heal-node", "add-demand",
                                                                        "resize", "run")]
                         + [("approvals", s) for s in ("list", "approve", "reject")] + [("policy", "init"),
                                                                                        ("policy", "push")])
def test_every_subcommand_the_docs_name_exists(group: str, sub: str) -> None:
    assert re.search(rf"\b{group} {sub}\b", ALL), (group, sub)
    assert help_of(group, sub)


def test_the_supported_pythons_are_the_projects_and_the_ones_ci_installs_on() -> None:
    requires = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"]
    oldest = requires.removeprefix(">=3.")
    install = docs.flat(README[README.index("## Install on a laptop"):])
    assert f"Python 3.{oldest} to 3.13 (`requires-python {requires.replace('>=', '>= ')}`" in install
    assert re.search(rf"scripts/test_install.py {oldest} 12 13\b", MAKEFILE)
    assert f"Python 3.{oldest}, 3.12 and 3.13" in docs.flat(docs.page("internals/contributing.md"))
    ci = (ROOT / ".ci/run").read_text()
    assert "make test-install" in ci
    assert "make docs" in ci


def test_the_holds_are_listed_in_the_order_the_engine_applies_them() -> None:
    listed = re.findall(r"^\d+\. \*\*([^*]+)\*\*", docs.page("policy/holds.md"), re.M)
    assert listed == [rule.name for rule in RULES]


def test_every_template_parameter_is_in_the_deploy_table() -> None:
    table = "\n".join(line for line in docs.page("deploy/index.md").splitlines() if line.startswith("| `"))
    documented = set(re.findall(r"`(\w+)`", table))
    assert set(template()["Parameters"]) <= documented, set(template()["Parameters"]) - documented


def test_what_why_reads_is_what_the_page_says() -> None:
    page = docs.flat(docs.page("cli/why.md"))
    assert f"the newest {SLACK_READ_MAX:,} records" in page
    assert f"reads up to {CLI_READ_MAX:,}" in page


def test_the_layer_ships_the_data_of_the_services_the_page_counts() -> None:
    counted = re.search(r"botocore's data for the (\w+) services", docs.flat(docs.page("deploy/index.md")))
    assert counted
    assert NUMBERS[counted.group(1)] == len(build_layer().SERVICES)


def _yaml_of(*pages: str) -> str:
    return "\n".join(b for page in pages for b in re.findall(r"```yaml\n(.*?)```", docs.page(page), re.S))


def test_every_policy_field_is_in_the_policy_reference() -> None:
    schema = Policy.model_json_schema()
    fields = set(schema["properties"])
    for definition in schema["$defs"].values():
        fields |= set(definition.get("properties", {}))
    fields -= {"value", "percent"}  # an amount's own shape: written as 8 or "25%"
    blocks = _yaml_of("policy/reference.md", "policy/budgets.md")
    assert sorted(f for f in fields if not re.search(rf"(?<![\w.]){f}:", blocks)) == []


def test_the_references_approval_block_holds_the_defaults() -> None:
    written = next(d["approval"] for b in re.findall(r"```yaml\n(.*?)```", docs.page("policy/reference.md"), re.S)
                   if isinstance(d := yaml.safe_load(b), dict) and "approval" in d)
    assert written == Approval().model_dump()


def test_the_bounds_of_an_approved_plan_are_the_codes() -> None:
    page = docs.flat(docs.page("deploy/approvals.md"))
    age = Approval.model_fields["max_plan_age_minutes"]
    low, high = (next(getattr(m, k) for m in age.metadata if hasattr(m, k)) for k in ("ge", "le"))
    assert f"`approval.max_plan_age_minutes` (default {age.default}, from {low} to {high:,})" in page
    assert f"`MAX_APPROVAL_ROUNDS` ({MAX_APPROVAL_ROUNDS})" in page
    assert f"it went stale in {MAX_APPROVAL_ROUNDS} rounds of approval" in page


def test_the_bounds_of_a_reservation_are_the_codes() -> None:
    page = docs.flat(docs.page("policy/reservations.md"))
    assert f"more than **{AHEAD_MAX.days} days** ahead" in page
    assert f"**one run interval plus {SETTLE_MINUTES} minutes**" in page
    assert f"After {RESERVE_ATTEMPTS} such rounds it gives up" in page


def test_the_clis_lease_is_the_codes() -> None:
    page = docs.flat(docs.page("cli/apply.md"))
    times = {v: k for k, v in NUMBERS.items()}
    assert f"The lease is {times[int(LEASE.total_seconds() // 60)]} minutes, whatever `--timeout`" in page
    assert timedelta(minutes=1) == HEARTBEAT_EVERY
    assert "a heartbeat renews it every minute" in page
    assert f"lapses within {times[int(LEASE.total_seconds() // 60)]} minutes" in page


def test_the_readmes_sandbox_commands_are_the_walk_the_emulator_page_tests() -> None:
    """tests/e2e/test_sandbox_controller.py runs the page's walk as written; the README shows the start of it."""
    def commands(text: str, heading: str) -> list[str]:
        block = re.search(r"```bash\n(.*?)```", text[text.index(heading):], re.S)
        assert block is not None, heading
        return [" ".join(shlex.split(line, comments=True)) for line in block.group(1).splitlines()
                if line.strip() and not line.startswith("#")]

    readme = commands(README, "## A sandbox where every command works")
    walk = commands(docs.page("cli/emulator.md"), "### A first walk")
    assert len(readme) >= 10
    at = 0
    for command in readme:
        assert command in walk[at:], f"{command!r} is not in the emulator page's walk after step {at}"
        at = walk.index(command, at) + 1
