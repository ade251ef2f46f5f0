"""A message at the far end of scale: an approval that cuts every team of a cluster of 10,000."""

from __future__ import annotations

from rebalancer.app.notifications.messages import Message
from rebalancer.domain.plan import Change, FieldChange

TEAMS = 10_000


def cut_every_team() -> Message:
    """An approval that cuts every team of a cluster of 10,000, each for its own long reason, with a setting, a
    note, a warning and an approval reason per team: everything a message lists, at once and at scale."""
    changes = tuple(Change(team=f"team-{i:05d}", instance_type="ml.p5.48xlarge", resource="accelerators",
                           before=16, after=16 - 1 - (i % 7), reason=f"capacity lost: {'x' * 200} {i}")
                    for i in range(TEAMS))
    fields = tuple(FieldChange(team=f"team-{i:05d}", field="ComputeQuotaConfig.PreemptTeamTasks", before="Never",
                               after="LowerPriority") for i in range(TEAMS))
    return Message(kind="approval_request", cluster="huge", approval_id="id1", changes=changes,
                   field_changes=fields, execution_url="https://console/execution/huge",
                   approve_url="https://api/approvals/id1?decision=approve&sig=s",
                   reject_url="https://api/approvals/id1?decision=reject&sig=s", expires="2026-12-01T12:00:00+00:00",
                   notes=tuple(f"team-{i:05d}: budget 80 % spent" for i in range(TEAMS)),
                   warnings=tuple(f"team-{i:05d}: quota edited in the console" for i in range(TEAMS)),
                   approval_reasons=tuple(f"team-{i:05d} loses more than 4 accelerators" for i in range(TEAMS)))
