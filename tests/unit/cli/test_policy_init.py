"""`rebalancer policy init` on a saved snapshot: weights in proportion to what each quota holds (reduced), the
quotas' own settings, mode dry-run, and a file the loader accepts."""

from __future__ import annotations

from pathlib import Path

import yaml
from click.testing import CliRunner

from rebalancer.domain.policy import Policy
from rebalancer.domain.pools import holdings
from rebalancer.domain.snapshot import Snapshot
from rebalancer.parsing.loading import load_model_file
from rebalancer_tools.cli import cli

ROOT = Path(__file__).resolve().parents[3]
SNAPSHOT = ROOT / "examples/snapshot.json"


def test_weights_follow_the_quotas_and_settings_are_the_quotas_own() -> None:
    got = CliRunner().invoke(cli, ["policy", "init", "--snapshot", str(SNAPSHOT)])
    assert got.exit_code == 0, got.output
    policy = Policy.model_validate(yaml.safe_load(got.stdout))
    assert policy.mode == "dry-run"
    snap = load_model_file(Snapshot, SNAPSHOT)
    held = {q.team: sum(holdings(q).values()) for q in snap.quotas}
    weights = {t: tp.weight for t, tp in policy.teams.items()}
    assert set(weights) == set(held)
    for a in held:  # the same proportions
        for b in held:
            assert weights[a] * held[b] == weights[b] * held[a]
    for q in snap.quotas:
        tp = policy.teams[q.team]
        assert tp.fair_share_weight == q.ComputeQuotaTarget.FairShareWeight
        assert tp.preempt_team_tasks == q.ComputeQuotaConfig.PreemptTeamTasks
        assert tp.sharing is not None
        assert tp.sharing.strategy == q.ComputeQuotaConfig.ResourceSharingConfig.Strategy  # type: ignore[union-attr]
    assert got.stdout.startswith("# The policy of ml-shared as it is today")


def test_one_source_is_required() -> None:
    got = CliRunner().invoke(cli, ["policy", "init"])
    assert got.exit_code == 2
    assert got.stderr.strip() == "error: --cluster: give exactly one of --cluster or --snapshot"
