"""Ownership on the emulator: quotas (and the scheduler config) the rebalancer creates carry a Description and a
tag naming it; a quota CloudFormation created (tag aws:cloudformation:stack-name) is held outside the policy:
no request touches it, its amounts count as taken, and `diff` says why."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from support.emulator import in_process_emulator
from support.fake_clock import FakeClock
from support.five_teams import BEFORE, P5, setup_cluster

from rebalancer.adapters.aws import AwsClients
from rebalancer.adapters.collect import collect_snapshot
from rebalancer.adapters.sagemaker.quota_writer import Poller, QuotaWriter
from rebalancer.domain.ownership import CLOUDFORMATION_STACK_TAG, MANAGED_BY, MANAGED_BY_KEY, QUOTA_DESCRIPTION
from rebalancer.domain.policy import Policy
from rebalancer.planning.planner import make_plan
from rebalancer.planning.pools import build_pools
from rebalancer_tools.reports.drift import find_drift

NOW = datetime(2026, 11, 30, 5, 0, tzinfo=UTC)


def _policy(teams: dict[str, Any]) -> Policy:
    return Policy.model_validate({"mode": "auto", "stability": {"cooldown_minutes": 0}, "teams": teams})


def _collect() -> Any:
    return collect_snapshot("c1", AwsClients(region="us-east-1"), now=NOW, kube=lambda _d: None,
                            metrics_window=None)


def test_a_quota_the_rebalancer_creates_carries_a_description_and_its_tag() -> None:
    with in_process_emulator() as handle:
        arn, before = setup_cluster(handle.emulator, handle.sagemaker)
        snapshot = _collect().snapshot
        plan = make_plan(snapshot, _policy({t: {} for t in [*BEFORE, "f"]}), NOW)
        [create] = [r for r in plan.requests if r.operation == "CreateComputeQuota"]
        assert create.parameters["Description"] == QUOTA_DESCRIPTION
        assert create.parameters["Tags"] == [{"Key": MANAGED_BY_KEY, "Value": MANAGED_BY}]
        clock = FakeClock()
        report = QuotaWriter(handle.sagemaker, Poller(sleep=clock.sleep, clock=clock)).apply(arn, [create], before)
        assert report.succeeded, report.lines()
        sm = handle.sagemaker
        quota_id = report.outcomes[0].quota_id
        described = sm.describe_compute_quota(ComputeQuotaId=quota_id)
        assert described["Description"] == QUOTA_DESCRIPTION
        assert sm.list_tags(ResourceArn=described["ComputeQuotaArn"])["Tags"] == [
            {"Key": MANAGED_BY_KEY, "Value": MANAGED_BY}]
        assert _collect().snapshot.quota_tags[quota_id] == {MANAGED_BY_KEY: MANAGED_BY}


def test_a_quota_cloudformation_created_is_never_rewritten() -> None:
    with in_process_emulator() as handle:
        _, quotas = setup_cluster(handle.emulator, handle.sagemaker)
        b = next(q for q in quotas if q.team == "b")
        handle.sagemaker.add_tags(ResourceArn=b.ComputeQuotaArn,
                                  Tags=[{"Key": CLOUDFORMATION_STACK_TAG, "Value": "ml-quotas"}])
        collected = _collect()
        assert not [w for w in collected.warnings if "tags" in w]
        snapshot = collected.snapshot
        # b asks for much more, a gives up: without ownership the plan would raise b
        policy = _policy({"a": {"cap": {P5: 4}}, "b": {"guarantee": {P5: 16}, "weight": 10}, "c": {}, "d": {},
                          "e": {}})
        plan = make_plan(snapshot, policy, NOW)
        assert "b" not in {r.team for r in plan.requests}
        assert "b" not in {c.team for c in plan.changes}
        assert any("created by CloudFormation stack ml-quotas: held outside the policy and never rewritten"
                   in w for w in plan.warnings), plan.warnings
        assert not any(w.startswith("teams with a quota but not in the policy") for w in plan.warnings)
        # its 8 GPUs count as taken: the other teams share the remaining 24
        [pool] = build_pools(snapshot, policy, NOW)[0]
        assert pool.capacity == 32 - BEFORE["b"]
        assert "b" not in {c.team for c in pool.claims}
        [owner] = [d for d in find_drift(snapshot, policy) if d.field == "owner"]
        assert owner.subject == "b"
        assert "never rewritten" in owner.line()
        assert "CloudFormation stack ml-quotas" in owner.line()


def test_without_the_tags_the_snapshot_says_so() -> None:
    with in_process_emulator() as handle:
        setup_cluster(handle.emulator, handle.sagemaker)
        handle.emulator.inject("server-error", "ListTags", times=None)
        collected = _collect()
    assert collected.snapshot.quota_tags == {}
    assert any(w.startswith("quota tags not read, so quotas created by CloudFormation are not recognised")
               for w in collected.warnings), collected.warnings


def test_the_scheduler_config_the_rebalancer_creates_carries_its_tag() -> None:
    with in_process_emulator() as handle:
        setup_cluster(handle.emulator, handle.sagemaker)
        snapshot = _collect().snapshot
        plan = make_plan(snapshot, Policy.model_validate(
            {"mode": "auto", "teams": {t: {} for t in BEFORE}, "cluster": {"fair_share": "Enabled"}}), NOW)
    [create] = plan.scheduler_requests
    assert create.operation == "CreateClusterSchedulerConfig"
    assert create.parameters["Tags"] == [{"Key": MANAGED_BY_KEY, "Value": MANAGED_BY}]
    assert "hyperpod-rebalancer" in create.parameters["Description"]
