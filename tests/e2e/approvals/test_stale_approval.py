"""An approved plan is checked against the cluster as it is before anything is written, through the real state
machine on moto's interpreter (RequestApproval → Recollect → Recheck → Decide): approved after a node failed, it
is made again on the capacity left and written within the approval, and no write raises a pool above its healthy
capacity; approved after a console edit, it goes beyond what was approved, so the approval is superseded and a new
one asked for, saying why, and only the plan approved then is written."""

from __future__ import annotations

from urllib.parse import urljoin

import pytest
from support.approval_page import review_form
from support.approval_stack import CLUSTER, P5, Waiting

from rebalancer.app import wiring
from rebalancer.app.notifications.messages import email_links
from rebalancer.app.notifications.notify import approval_id_of

pytestmark = pytest.mark.slow  # a stack deploy and a run on moto's interpreter: seconds


def approve(waiting: Waiting, approve_url: str, name: str) -> None:
    page = waiting.stack.http("GET", approve_url)
    action, fields = review_form(page["body"])
    decided = waiting.stack.http("POST", urljoin(approve_url, action),
                                 form={**fields, "decision": "approve", "name": name})
    assert decided["statusCode"] == 200, decided["body"]


def p5_gpus(waiting: Waiting) -> dict[str, int]:
    out = {}
    for q in waiting.emu.emulator.quotas(CLUSTER):
        team = q["ComputeQuotaTarget"]["TeamName"]
        out[team] = sum(int(r.get("Accelerators", 0)) for r in q["ComputeQuotaConfig"]["ComputeQuotaResources"]
                        if r["InstanceType"] == P5)
    return out


def after_the_first_request(waiting: Waiting) -> list[str]:
    """The states the run entered from its first RequestApproval on."""
    entered = waiting.stack.states_entered(waiting.arn)
    return entered[entered.index("RequestApproval"):]


def test_approved_after_a_node_failed_the_plan_is_made_again_and_nothing_goes_above_capacity(
        waiting: Waiting) -> None:
    emu = waiting.emu.emulator
    [raise_] = [c for c in waiting.plan.changes if c.pool == P5 and c.after > c.before]
    assert (raise_.team, raise_.before, raise_.after) == ("research", 12, 24)  # planned on 4 nodes, 32 GPUs
    emu.fail_node(CLUSTER, "gpu-p5-0")  # 24 GPUs left while the plan waits
    approve(waiting, waiting.links["Approve"], "alice")
    done = waiting.stack.wait(waiting.arn)
    assert done["status"] == "SUCCEEDED"
    assert after_the_first_request(waiting)[:6] == ["RequestApproval", "Recollect", "Recheck", "Decide", "Apply",
                                                    "StartVerify"]
    [recheck] = [a for a in waiting.stack.audit(CLUSTER) if a["kind"] == "recheck"]
    assert recheck["outcome"] == "replanned"
    assert recheck["detail"]["stale"][0] == f"the healthy capacity of {P5} fell from 32 to 24"
    # research gets what the 24 GPUs leave it, less than the 24 approved on 32; the rest of the plan as approved.
    assert p5_gpus(waiting)["research"] == 16
    assert sum(p5_gpus(waiting).values()) <= 24
    assert emu.monitor.raised_above_capacity() == []
    [applied] = [m for m in waiting.stack.sns_messages() if m["kind"] == "applied"]
    assert "The approved plan was made again before writing, and stays within the approval:" in applied["Message"]


def test_approved_after_a_console_edit_the_approval_is_superseded_and_asked_again(waiting: Waiting) -> None:
    emu = waiting.emu.emulator
    first = waiting.approval()
    before = waiting.quotas()
    research = emu.quota("research-quota", CLUSTER)
    edit = research["ComputeQuotaConfig"]
    edit["ComputeQuotaResources"] = [dict(r, Accelerators=6) if r["InstanceType"] == P5 else r
                                     for r in edit["ComputeQuotaResources"]]
    emu.external_edit("research-quota", {"ComputeQuotaConfig": edit}, cluster=CLUSTER)  # 12 → 6 in the console
    edited = waiting.quotas()
    approve(waiting, waiting.links["Approve"], "alice")
    waiting.stack.wait_for_state(waiting.arn, "RequestApproval")  # asked again
    waiting.stack.wait_until(lambda: len(after_the_first_request(waiting)) >= 5 and bool(
        [m for m in waiting.stack.audit(CLUSTER) if m["kind"] == "approval-requested"][1:]), timeout=20,
        what="the second approval request")
    assert after_the_first_request(waiting)[:5] == ["RequestApproval", "Recollect", "Recheck", "Decide",
                                                    "RequestApproval"]
    assert waiting.quotas() == edited  # nothing was written on the old approval
    store = wiring.store()
    assert store.approvals.get(first.approval_id).status == "superseded"  # type: ignore[union-attr]
    [superseded] = [a for a in waiting.approval_audit() if a["outcome"] == "superseded"]
    assert superseded["detail"]["approval_id"] == first.approval_id
    assert "the quota of team research moved (version 1 → 2)" in superseded["detail"]["why"]
    assert f"research {P5} accelerators 6→24: larger than the approved 12→24" in superseded["detail"]["why"]

    [asked] = [m for m in waiting.stack.sns_messages() if m["kind"] == "approval_request"]
    assert "The approved plan was not written: the cluster changed while it waited." in asked["Message"]
    assert "changed since the plan: the quota of team research moved (version 1 → 2)" in asked["Message"]
    second = email_links(asked["Message"])
    assert approval_id_of(waiting.arn, 2) in second["Approve"]
    # The first round's link no longer decides anything: it shows the approval as superseded.
    assert "already superseded" in waiting.stack.http("GET", waiting.links["Approve"])["body"]

    approve(waiting, second["Approve"], "bob")
    done = waiting.stack.wait(waiting.arn)
    assert done["status"] == "SUCCEEDED"
    assert waiting.stack.states_entered(waiting.arn)[-2:] == ["NotifyApplied", "Applied"]
    assert p5_gpus(waiting)["research"] == 24
    assert waiting.quotas() != before
    assert [(a["outcome"], a.get("who")) for a in waiting.approval_audit()] == [
        ("approved", "alice"), ("superseded", None), ("approved", "bob")]
    assert emu.monitor.raised_above_capacity() == []
