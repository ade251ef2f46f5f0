"""`rebalancer diff` says what of a policy the cluster cannot keep (exit 3, as for drift), naming the teams and the
totals, where it used to say "in sync"; and it refuses a policy team whose name looks like a typo of an existing
team's, with the planner's own words. Offline: a snapshot file."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from click.testing import CliRunner, Result
from support.clusters import snapshot

from rebalancer_tools.cli import cli

P5 = "ml.p5.48xlarge"
TEAMS = {"research": {P5: 16}, "training": {P5: 16}}  # 32 GPUs on 4 healthy nodes, as the policy wants them


def diff(tmp_path: Path, teams: dict[str, object], *extra: str) -> Result:
    snap, pol = tmp_path / "snap.json", tmp_path / "policy.yaml"
    snap.write_text(snapshot({P5: 4}, quotas=TEAMS).model_dump_json())
    pol.write_text(yaml.safe_dump({"teams": teams}))
    return CliRunner().invoke(cli, ["diff", "--snapshot", str(snap), "--policy", str(pol), *extra])


def test_guarantees_above_the_pool_are_not_in_sync(tmp_path: Path) -> None:
    keepable = diff(tmp_path, {"research": {"guarantee": {P5: 16}}, "training": {"guarantee": {P5: 16}}})
    assert keepable.exit_code == 0, keepable.output
    assert "in sync" in keepable.stdout

    result = diff(tmp_path, {"research": {"guarantee": {P5: 24}}, "training": {"guarantee": {P5: 16}}})
    assert result.exit_code == 3, result.output
    assert "in sync" not in result.stdout
    assert "test: 1 promise(s) of" in result.stdout
    assert (f"guarantees and reservations on {P5} sum to 40, above its healthy capacity of 32 (guarantees are scaled "
            "down to fit, and a team without one may get nothing): research 24 guaranteed, training 16 guaranteed"
            ) in result.stdout

    as_json = diff(tmp_path, {"research": {"guarantee": {P5: 24}}, "training": {"guarantee": {P5: 16}}},
                   "--format", "json")
    assert as_json.exit_code == 3
    out = json.loads(as_json.stdout)
    assert out["in_sync"] is False
    assert [line.split(":")[0] for line in out["cannot_keep"]] == [
        f"guarantees and reservations on {P5} sum to 40, above its healthy capacity of 32 (guarantees are scaled "
        "down to fit, and a team without one may get nothing)"]


def test_a_typo_of_an_existing_team_is_refused_as_the_planner_refuses_it(tmp_path: Path) -> None:
    result = diff(tmp_path, {"research": {}, "training": {}, "reserch": {}})
    assert result.exit_code == 2, result.output
    assert result.stderr.strip().endswith("teams.reserch: team 'reserch' has no quota and is close to the existing "
                                          "team 'research': did you mean research? A quota's team name can never "
                                          "be changed; if reserch is a new team, mark it `new: true`")
    marked = diff(tmp_path, {"research": {}, "training": {}, "reserch": {"new": True}})
    assert marked.exit_code == 3, marked.output  # a quota to create: drift, not a refusal
