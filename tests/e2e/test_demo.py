"""The demo's scenarios, without the narrative, so `make demo` cannot rot: each scenario must pass its own checks,
and the emulator's state is asserted here again, independently of those checks."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from rebalancer_tools.cli import cli
from rebalancer_tools.cli.demo_cmd import run_cli
from rebalancer_tools.demo import scenarios
from rebalancer_tools.demo.scenarios import ADMIN, ScenarioResult, SilentStory
from rebalancer_tools.demo.world import World, open_world
from rebalancer_tools.emulator.demo_cluster import DEMO, G5, P5, TRN1

pytestmark = pytest.mark.slow  # one demo run: about 10 s

ROOT = Path(__file__).resolve().parents[2]
POLICY = (ROOT / "examples" / "demo-policy.yaml").read_text()
SEEDED = {t.name: dict(t.accelerators) for t in DEMO.teams}


def test_the_checks_catch_a_run_that_did_not_apply(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With the policy in dry-run mode nothing is applied: the node-failure scenario must report failure.
    (First in the module: it needs the emulator before the module's shared run opens it.)"""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    with open_world(POLICY.replace("mode: auto", "mode: dry-run")) as world:
        result = scenarios.node_failure(world, SilentStory())
    failed = {c.what for c in result.checks if not c.ok}
    assert not result.ok
    assert "the emulator holds the plan's quotas" in failed
    assert "quotas now fit healthy capacity" in failed


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[World, dict[str, ScenarioResult]]]:
    with pytest.MonkeyPatch.context() as mp:
        for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
            mp.setenv(name, "testing")
        with open_world(POLICY) as world:
            results = scenarios.run_all(world, SilentStory(), tmp_path_factory.mktemp("demo"), run_cli)
            yield world, {r.key: r for r in results}


def test_the_demo_runs_the_scenarios_its_help_counts(run: tuple[World, dict[str, ScenarioResult]]) -> None:
    assert tuple(run[1]) == scenarios.SCENARIOS


@pytest.mark.parametrize("key", scenarios.SCENARIOS)
def test_scenario_ends_as_expected(run: tuple[World, dict[str, ScenarioResult]], key: str) -> None:
    result = run[1][key]
    assert result.ok, [c for c in result.checks if not c.ok]


def test_node_failure_shrinks_p5_quotas_to_healthy_capacity(run: tuple[World, dict[str, ScenarioResult]]) -> None:
    r = run[1]["node-failure"]
    assert sum(q.get(P5, 0) for q in r.before.values()) == 32
    assert sum(q.get(P5, 0) for q in r.after.values()) == 24 == r.capacity[P5]
    assert "RequestApproval" not in r.states
    # Only what was idle went: every team still holds what its running work needs.
    assert {t: q.get(P5, 0) for t, q in r.after.items() if q.get(P5)} == {
        "research": 8, "training": 8, "inference": 4, "data-science": 4}


def test_approved_plan_moved_idle_h100s_to_the_queueing_team(run: tuple[World, dict[str, ScenarioResult]]) -> None:
    r = run[1]["approved-alarm"]
    assert r.states.index("RequestApproval") < r.states.index("Apply")
    assert r.after["research"][P5] == r.before["research"][P5] + 4
    assert r.after["data-science"].get(P5, 0) == 0
    assert "Approve:\nhttp://127.0.0.1:" in r.outputs["email"]


def test_rejected_plan_changed_nothing(run: tuple[World, dict[str, ScenarioResult]]) -> None:
    r = run[1]["rejected-alarm"]
    assert r.plan is not None
    assert any(c.team == "training" and c.instance_type == TRN1 for c in r.plan.changes)
    assert r.after == r.before
    assert "Apply" not in r.states


def test_audit_table_and_rollback(run: tuple[World, dict[str, ScenarioResult]]) -> None:
    world, results = run
    audit = world.stack.audit(DEMO.cluster_name)
    approvals = [(a["outcome"], a["who"]) for a in audit if a["kind"] == "approval"]
    assert approvals == [("approved", ADMIN), ("rejected", ADMIN)]
    first_three = {results[k].execution for k in ("node-failure", "approved-alarm", "rejected-alarm")}
    assert [a["outcome"] for a in audit if a["kind"] == "apply" and a["execution"] in first_three] == ["applied",
                                                                                                        "applied"]
    # A team changed in two pools at once has both in the audit record.
    [approved] = [a for a in audit if a["kind"] == "apply" and a["execution"] == results["approved-alarm"].execution]
    assert approved["before"]["data-science"] == {P5: 4, G5: 4}
    assert approved["after"]["data-science"] == {P5: 0, G5: 0}
    # The rollback restored the quotas the cluster was seeded with (read from the spec, not from the snapshot).
    assert results["rollback"].after == SEEDED
    assert "approval" in results["rollback"].outputs["history"]
    # ... and the rollback done from the CLI is in the audit log too, with the quotas it put back.
    [rollback] = [a for a in audit if a["kind"] == "rollback"]
    assert (rollback["outcome"], rollback["detail"]["source"]) == ("restored", "cli")
    # It names only the quotas it wrote (those already at the seeded value were left alone), each back at the seed.
    written = rollback["after"]
    assert "data-science" in written
    assert all(quotas == SEEDED[team] for team, quotas in written.items())


def test_history_needs_a_table_or_a_stack() -> None:
    got = CliRunner().invoke(cli, ["history", "--cluster", DEMO.cluster_name], env={"REBALANCER_TABLE": None})
    assert got.exit_code == 2
    assert "--table" in got.output
