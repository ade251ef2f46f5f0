"""The slash command's message (rebalancer.app.approvals.slash_command.message): within Slack's limits however much
waits, and recorded text shown as text, never as a mention or a link."""

from __future__ import annotations

from datetime import timedelta

from slack_sdk.models.blocks import Block
from support.clusters import T0, snapshot

from rebalancer.app.approvals.slash_command import SHOWN_MAX, message
from rebalancer.domain.snapshot import PendingWorkload
from rebalancer.planning.why import LastChange, explain

P5 = "ml.p5.48xlarge"


def test_many_pending_workloads_stay_within_slacks_limits_and_are_counted() -> None:
    jobs = tuple(PendingWorkload(name=f"job-{i:02d}", team="a", pool=P5, accelerators=64, pods=8,
                                 created=T0 - timedelta(minutes=i)) for i in range(SHOWN_MAX + 2))
    snap = snapshot({P5: 4}, quotas={"a": {P5: 8}}).model_copy(update={"pending_workloads": jobs})
    doc = message(explain(snap, None, "a"))
    assert len(doc["blocks"]) == SHOWN_MAX + 3 <= 50
    assert all(Block.parse(b) is not None for b in doc["blocks"])
    assert "2 more pending: `rebalancer why --cluster test --team a`" in doc["blocks"][-1]["elements"][0]["text"]
    assert all(len(b.get("text", {}).get("text", "")) <= 3000 for b in doc["blocks"])


def test_recorded_text_is_escaped() -> None:
    snap = snapshot({P5: 4}, quotas={"a": {P5: 8}})
    change = LastChange(pool=P5, at=T0, execution="x", before=16, after=8, reason="<!channel> & <https://evil|x>",
                        outcome="applied")
    quota = message(explain(snap, None, "a", last_changes={P5: change}))["blocks"][1]["text"]["text"]
    assert "&lt;!channel&gt; &amp; &lt;https://evil|x&gt;" in quota
    assert "<!channel>" not in quota
