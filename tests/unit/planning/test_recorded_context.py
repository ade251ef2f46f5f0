"""The planning context as a document (rebalancer.domain.recorded_context) and `rebalancer plan --snapshot S
--context C`: the context comes back as the plan read it, the plan is made at the time and in the mode it was, and
a context that is not the snapshot's is refused in one line."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

from click.testing import CliRunner, Result
from support.clock import T0
from support.clusters import snapshot

from rebalancer.adapters.dynamodb.table import pack, unpack
from rebalancer.domain.budget import BudgetUsage
from rebalancer.domain.context import PlanningContext, RecentChange
from rebalancer.domain.policy import Policy
from rebalancer.domain.recorded_context import RecordedContext, policy_digest
from rebalancer.domain.reservation import Reservation
from rebalancer.domain.snapshot import Snapshot
from rebalancer_tools.cli import cli

P5 = "ml.p5.48xlarge"
POLICY = {"stability": {"cooldown_minutes": 30}, "teams": {"a": {"weight": 1}, "b": {"weight": 1}}}


def full_context() -> PlanningContext:
    """Every field of the context set."""
    return PlanningContext(
        known_versions={"a": 3, "b": 7},
        budget_usage={"a": BudgetUsage(period="2026-11", accelerator_hours=12.25, borrowed_hours=0.5, cost=3.1,
                                       estimated=True, unpriced=("ml.g5.12xlarge",))},
        recent_changes=(RecentChange("a", T0 - timedelta(minutes=5)),
                        RecentChange("b", T0 - timedelta(hours=1), P5, 8.0, 4.0)),
        last_changed={"a": T0 - timedelta(minutes=5), "b": T0 - timedelta(hours=1)},
        pending_since={"b": {P5: T0 - timedelta(hours=3)}},
        reservations=(Reservation(reservation_id="r-1", cluster="test", team="b", pool=P5, accelerators=8,
                                  start=T0 - timedelta(hours=1), until=T0 + timedelta(days=1), reason="launch",
                                  status="approved", requested_by="alice", requested_at=T0 - timedelta(days=1)),),
        unavailable_since={"i-1": ("SystemUpdating", T0 - timedelta(minutes=90))},
        trailing_usage={"a": {P5: 1.0 / 3}, "b": {P5: 2e-17}})


def case() -> tuple[Snapshot, Policy]:
    snap = snapshot({P5: 2}, quotas={"a": {P5: 12}, "b": {P5: 4}}, in_use={"a": {P5: 4}}, pending={"b": {P5: 12}},
                    modified={"a": T0 - timedelta(minutes=20)})
    return snap, Policy.model_validate(POLICY)


def test_the_context_comes_back_as_the_plan_read_it_through_json_and_the_tables_packing() -> None:
    snap, policy = case()
    context = full_context()
    recorded = RecordedContext.of(snap, policy, T0 + timedelta(seconds=3), context)
    doc = json.loads(recorded.model_dump_json())
    assert doc["recent_changes"][1] == {"team": "b", "at": "2026-11-30T11:00:00Z", "pool": P5, "before": 8.0,
                                        "after": 4.0}
    for back in (RecordedContext.model_validate(doc), RecordedContext.model_validate(unpack(pack(doc)))):
        assert back == recorded
        assert back.context() == context
        assert back.planned_at == T0 + timedelta(seconds=3)


def test_the_policy_digest_ignores_the_mode_and_the_way_the_policy_was_written() -> None:
    _, policy = case()
    reordered = Policy.model_validate({"teams": {"b": {"weight": 1}, "a": {"weight": 1}},
                                       "stability": {"cooldown_minutes": 30}, "mode": "dry-run"})
    assert policy_digest(reordered) == policy_digest(policy)
    assert policy_digest(policy.model_copy(update={"surplus": "spread"})) != policy_digest(policy)


def files(tmp_path: Path, recorded: RecordedContext, snap: Snapshot, policy: dict[str, object]) -> list[str]:
    paths = [tmp_path / "snap.json", tmp_path / "context.json", tmp_path / "policy.json"]
    paths[0].write_text(snap.model_dump_json())
    paths[1].write_text(recorded.model_dump_json())
    paths[2].write_text(json.dumps(policy))
    return ["--snapshot", str(paths[0]), "--context", str(paths[1]), "--policy", str(paths[2])]


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, ["plan", *args, "--format", "json"], env={"REBALANCER_TABLE": None})


def test_the_plan_is_made_at_the_recorded_time_in_the_recorded_mode(tmp_path: Path) -> None:
    """a's quota changed 20 minutes before the snapshot: held by its 30-minute cooldown at the snapshot's time,
    free 15 minutes later, when the controller planned. A deployment's mode override is the context's mode."""
    snap, policy = case()
    context = PlanningContext(last_changed={"a": T0 - timedelta(minutes=20)})
    later = RecordedContext.of(snap, policy.model_copy(update={"mode": "dry-run"}), T0 + timedelta(minutes=15),
                               context)
    got = run(*files(tmp_path, later, snap, POLICY))
    assert got.exit_code == 0, got.output
    assert "planned in mode dry-run, as the context was (the policy says auto" in got.stderr
    assert [(c["team"], c["after"]) for c in json.loads(got.stdout)["changes"]] == [("a", 4.0), ("b", 12.0)]
    at_snapshot = RecordedContext.of(snap, policy, T0, context)
    held = json.loads(run(*files(tmp_path, at_snapshot, snap, POLICY)).stdout)
    assert [(c["team"], c["after"], c["wanted"], c["hold"]["rule"]) for c in held["held"]] == [
        ("a", 12.0, 4.0, "cooldown"), ("b", 4.0, 12.0, "capacity")]


def test_a_context_of_another_policy_is_used_with_a_warning(tmp_path: Path) -> None:
    snap, policy = case()
    recorded = RecordedContext.of(snap, policy, T0, PlanningContext())
    other = {**POLICY, "surplus": "spread"}
    got = run(*files(tmp_path, recorded, snap, other))
    assert got.exit_code == 0, got.output
    assert got.stderr.startswith("warning: the context was recorded under another policy (sha256 ")


def test_a_context_that_is_not_the_snapshots_is_refused_in_one_line(tmp_path: Path) -> None:
    snap, policy = case()
    recorded = RecordedContext.of(snap, policy, T0, PlanningContext())
    args = files(tmp_path, recorded.model_copy(update={"taken_at": T0 - timedelta(minutes=1)}), snap, POLICY)
    got = run(*args)
    assert got.exit_code == 2
    assert got.stderr.startswith("error: --context: the context was recorded for the snapshot of test taken at "
                                 "2026-11-30T11:59:00+00:00, not this one (test at 2026-11-30T12:00:00+00:00)")
    assert len(got.stderr.splitlines()) == 1
    only_context = run(*args[2:])
    assert only_context.exit_code == 2
    assert "--context goes with --snapshot" in only_context.stderr
    with_table = run(*files(tmp_path, recorded, snap, POLICY), "--table", "t")
    assert "give --context or the table" in with_table.stderr
