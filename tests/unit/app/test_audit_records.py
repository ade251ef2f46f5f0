"""The audit writers (rebalancer.app.workflow.audit), one per record kind, into the in-memory audit log: what each
record holds is what `rebalancer history` and the rollback's "already rolled back" check read back."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from rebalancer.adapters.sagemaker.outcomes import ApplyReport, ChangeOutcome
from rebalancer.app.notifications.messages import DeliveryResult
from rebalancer.app.workflow import audit
from rebalancer.app.workflow.state import RunRef
from rebalancer.domain.plan import Change, Plan
from rebalancer_tools.fakes.memory_store import MemoryAudit
from rebalancer_tools.fakes.ticking_clock import TickingClock

T0 = datetime(2026, 11, 30, 12, tzinfo=UTC)
RUN = RunRef(cluster_name="c1", execution_name="c1-20261130T120000", execution_arn="arn:exec", source="cli",
             trigger={"kind": "schedule"})


def log() -> MemoryAudit:
    return MemoryAudit(TickingClock(T0))


def plan(*changes: tuple[str, str, float, float]) -> Plan:
    return Plan(cluster_name="c1", cluster_arn="arn:c1", taken_at=T0, mode="auto",
                changes=tuple(Change(team=t, instance_type=itype, resource="accelerators", before=b, after=a,
                                     reason="demand") for t, itype, b, a in changes))


def test_a_team_changing_in_two_pools_has_both_in_before_and_after() -> None:
    changes = plan(("a", "ml.p5.48xlarge", 8, 16), ("a", "ml.g5.12xlarge", 4, 0), ("b", "ml.p5.48xlarge", 16, 8))
    assert audit.by_team(changes.changes, "before") == {"a": {"ml.p5.48xlarge": 8, "ml.g5.12xlarge": 4},
                                                        "b": {"ml.p5.48xlarge": 16}}
    assert audit.by_team(changes.changes, "after")["a"] == {"ml.p5.48xlarge": 16, "ml.g5.12xlarge": 0}


def test_a_runs_records_carry_its_source_and_the_controllers_own_do_not() -> None:
    records = log()
    audit.trigger_started(records, "c1", RUN.execution_name, {"kind": "schedule", "event_id": "e1"})
    the_plan = plan(("a", "ml.p5.48xlarge", 8, 16))
    audit.planned(records, RUN, the_plan, decision="apply", known_versions={"a": 3}, who="alice")
    left = ChangeOutcome(team="a", operation="UpdateComputeQuota", quota_id="q-a", result="conflict",
                         message="changed by someone else after our write; left as it is",
                         held={"ml.p5.48xlarge": 12}, holds={"ml.p5.48xlarge": 12})
    undo = ApplyReport(cluster_arn="arn:c1", outcomes=(left,), succeeded=False, conflict=True)
    audit.rolled_back(records, RUN, the_plan, undo, ok=False, cause="ApplyFailed", scheduler_line=None)
    trigger, planned, rolled = records.records("c1")
    assert (trigger["kind"], trigger["outcome"], trigger["detail"]) == (
        "trigger", "started", {"kind": "schedule", "event_id": "e1"})
    assert (planned["kind"], planned["outcome"], planned["who"]) == ("plan", "apply", "alice")
    assert planned["detail"]["source"] == "cli"
    assert planned["detail"]["known_versions"] == {"a": 3}
    assert planned["detail"]["trigger"] == {"kind": "schedule"}
    assert (planned["before"], planned["after"]) == ({"a": {"ml.p5.48xlarge": 8}}, {"a": {"ml.p5.48xlarge": 16}})
    assert (rolled["kind"], rolled["outcome"]) == ("rollback", "incomplete")
    # What the quota holds, not the plan read backwards: someone else set it to 12 after our write, and it was left.
    assert (rolled["before"], rolled["after"]) == ({"a": {"ml.p5.48xlarge": 12}}, {"a": {"ml.p5.48xlarge": 12}})
    assert rolled["detail"] == {"source": "cli", "cause": "ApplyFailed", "outcomes": undo.lines(),
                                "left": {"a": "changed by someone else after our write; left as it is"}}


def test_a_rollback_record_holds_each_quotas_state_after_it_and_names_what_it_left() -> None:
    records = log()
    the_plan = plan(("a", "ml.p5.48xlarge", 8, 16), ("b", "ml.p5.48xlarge", 16, 8), ("c", "ml.p5.48xlarge", 0, 4))
    undo = ApplyReport(cluster_arn="arn:c1", succeeded=False, outcomes=(
        ChangeOutcome(team="a", operation="UpdateComputeQuota", quota_id="q-a", result="applied",
                      held={"ml.p5.48xlarge": 16}, holds={"ml.p5.48xlarge": 8}),
        ChangeOutcome(team="b", operation="UpdateComputeQuota", quota_id="q-b", result="refused",
                      message="left as it is: ml.p5.48xlarge: the enabled quotas would hold 40, the cluster has 32 "
                              "healthy", held={"ml.p5.48xlarge": 8}, holds={"ml.p5.48xlarge": 8}),
        ChangeOutcome(team="c", operation="DeleteComputeQuota", quota_id="q-c", result="applied", holds={})))
    audit.rolled_back(records, RUN, the_plan, undo, ok=False, cause=None, scheduler_line=None)
    [rolled] = records.records("c1")
    # a restored; b left where a node failure put the pool; c's quota (created by the run, never read) deleted.
    assert rolled["before"] == {"a": {"ml.p5.48xlarge": 16}, "b": {"ml.p5.48xlarge": 8}, "c": {"ml.p5.48xlarge": 4}}
    assert rolled["after"] == {"a": {"ml.p5.48xlarge": 8}, "b": {"ml.p5.48xlarge": 8}, "c": {}}
    assert list(rolled["detail"]["left"]) == ["b"]


def test_an_approval_without_comment_or_identity_stores_no_detail() -> None:
    records = log()
    audit.approval_decided(records, "c1", "run-1", "approved", "alice")
    audit.approval_decided(records, "c1", "run-1", "rejected", "bob", comment="too big",
                           identity={"via": "slack", "user": "U1"})
    audit.approval_not_delivered(records, "c1", "run-1", "TaskTimedOut", "carol")
    plain, commented, late = records.records("c1")
    assert "detail" not in plain
    assert commented["detail"] == {"comment": "too big", "identity": {"via": "slack", "user": "U1"}}
    assert (late["outcome"], late["who"]) == ("not-delivered:TaskTimedOut", "carol")


def test_an_approval_request_records_each_channels_answer_and_the_deadline() -> None:
    records = log()
    audit.approval_requested(records, RUN, "a1", T0 + timedelta(hours=1),
                             [DeliveryResult("sns", True, None), DeliveryResult("slack", False, "HTTP 500")])
    [record] = records.records("c1")
    assert (record["kind"], record["outcome"]) == ("approval-requested", "pending")
    assert record["detail"] == {"approval_id": "a1", "decide_by": "2026-11-30T13:00:00+00:00",
                                "sent": {"sns": "ok", "slack": "HTTP 500"}}


@pytest.mark.parametrize(("results", "outcome"), [
    ([DeliveryResult("sns", True, None), DeliveryResult("slack", True, "already sent")], "sent"),
    ([DeliveryResult("sns", True, None), DeliveryResult("slack", False, "HTTP 500")], "partial"),
    ([DeliveryResult("sns", False, "throttled"), DeliveryResult("slack", False, "HTTP 500")], "failed"),
])
def test_a_notification_is_sent_partial_or_failed_by_the_channels_that_went_out(results: list[DeliveryResult],
                                                                                 outcome: str) -> None:
    records = log()
    audit.notified(records, RUN, "applied", results)
    [record] = records.records("c1")
    assert (record["kind"], record["outcome"]) == ("notify-applied", outcome)
    assert record["detail"] == {r.channel: r.error or "ok" for r in results}
