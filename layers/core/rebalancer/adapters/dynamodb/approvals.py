"""Approvals: the pending record with its task token (decided once), the run's context for the review page, and
the review forms' single-use nonces."""

from __future__ import annotations

import json
from datetime import datetime

from boto3.dynamodb.conditions import Attr
from botocore.exceptions import ClientError

from rebalancer.adapters.dynamodb.table import (
    ARTIFACT_RETENTION,
    KEY,
    NONCE_RETENTION,
    SORT,
    TTL,
    Table,
    conditional_failed,
    epoch,
)
from rebalancer.domain.records import ApprovalRecord, ApprovalStatus, RunContext
from rebalancer.errors import ApprovalNotPending, RecordUnreadable
from rebalancer.parsing.text import printable


class TableApprovals:
    def __init__(self, table: Table):
        self.t = table

    def put(self, rec: ApprovalRecord) -> bool:
        """Stores a pending approval; False when one with this id exists (a retried request)."""
        return self.t.put_new({KEY: f"APPROVAL#{rec.approval_id}", SORT: "APPROVAL", "task_token": rec.task_token,
                               "execution_arn": rec.execution_arn, "cluster_name": rec.cluster_name,
                               "status": rec.status, "decide_by": rec.decide_by.isoformat(),
                               TTL: epoch(rec.decide_by + ARTIFACT_RETENTION)})

    def get(self, approval_id: str) -> ApprovalRecord | None:
        item = self.t.get(f"APPROVAL#{approval_id}", "APPROVAL")
        if item is None:
            return None
        try:
            return ApprovalRecord(approval_id=approval_id, task_token=str(item["task_token"]),
                                  execution_arn=str(item["execution_arn"]), cluster_name=str(item["cluster_name"]),
                                  status=item["status"], decide_by=datetime.fromisoformat(str(item["decide_by"])),
                                  decided_by=item.get("decided_by"))
        except (KeyError, ValueError) as e:
            raise RecordUnreadable(f"approval {approval_id} was recorded by an older version; this version cannot "
                                   f"read it ({type(e).__name__}: {printable(e)[:120]}); the run it belongs to "
                                   "expires on its own, nothing was changed") from None

    def decide(self, approval_id: str, status: ApprovalStatus, who: str) -> ApprovalRecord:
        """Pending → decided, once. Raises ApprovalNotPending (with the current status) for a replay or a late
        decision."""
        now = self.t.now()
        try:
            self.t.table.update_item(
                Key={KEY: f"APPROVAL#{approval_id}", SORT: "APPROVAL"},
                UpdateExpression="SET #s = :s, decided_by = :w, decided_at = :t",
                ConditionExpression=Attr("status").eq("pending") & Attr("decide_by").gt(now.isoformat()),
                ExpressionAttributeNames={"#s": "status"},
                ExpressionAttributeValues={":s": status, ":w": who, ":t": now.isoformat()})
        except ClientError as e:
            if not conditional_failed(e):
                raise
            current = self.get(approval_id)
            if current is None:
                raise ApprovalNotPending("unknown") from None
            raise ApprovalNotPending("expired" if current.status == "pending" else current.status) from None
        rec = self.get(approval_id)
        assert rec is not None
        return rec

    def supersede(self, approval_id: str, why: str) -> bool:
        """An approved plan that went stale was made again beyond what was approved: the approval no longer stands.
        False when there is no such approval."""
        try:
            self.t.table.update_item(
                Key={KEY: f"APPROVAL#{approval_id}", SORT: "APPROVAL"},
                UpdateExpression="SET #s = :s, superseded_because = :w, superseded_at = :t",
                ConditionExpression=Attr(KEY).exists(),
                ExpressionAttributeNames={"#s": "status"},
                ExpressionAttributeValues={":s": "superseded", ":w": why, ":t": self.t.now().isoformat()})
        except ClientError as e:
            if not conditional_failed(e):
                raise
            return False
        return True

    def put_context(self, approval_id: str, context: RunContext, decide_by: datetime) -> None:
        self.t.table.put_item(Item={KEY: f"APPROVAL#{approval_id}", SORT: "CONTEXT",
                                    "trigger": json.dumps(context.trigger, sort_keys=True, default=str),
                                    "started_at": context.started_at or "",
                                    TTL: epoch(decide_by + ARTIFACT_RETENTION)})

    def context(self, approval_id: str) -> RunContext:
        """The stored context of the approval's run; an empty one when none was stored."""
        item = self.t.get(f"APPROVAL#{approval_id}", "CONTEXT")
        if item is None:
            return RunContext(trigger={})
        try:
            trigger = json.loads(str(item.get("trigger") or "{}"))
        except ValueError:  # recorded by an older version, or by hand: the page shows no trigger
            trigger = {}
        return RunContext(trigger=trigger if isinstance(trigger, dict) else {},
                          started_at=str(item.get("started_at") or "") or None)

    def claim_nonce(self, approval_id: str, nonce_id: str, expires: datetime) -> bool:
        """True the first time a review form (its nonce's random part) is submitted; False for a replay."""
        return self.t.put_new({KEY: f"APPROVAL#{approval_id}", SORT: f"NONCE#{nonce_id}",
                               "claimed_at": self.t.now().isoformat(), TTL: epoch(expires + NONCE_RETENTION)})
