from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from support.large_messages import TEAMS, cut_every_team
from support.props import properties

from rebalancer.app.notifications.messages import Message, email_links, render_blocks, render_text
from rebalancer.domain.plan import Change, FieldChange, Hold, movement


def _change(team: str, before: float, after: float) -> Change:
    return Change(team=team, instance_type="ml.p5.48xlarge", resource="accelerators", before=before, after=after,
                  reason=f"demand of {team}")


def test_text_lists_each_change_with_its_reason_and_the_links() -> None:
    m = Message(kind="approval_request", cluster="c1", changes=(_change("research", 8, 16), _change("infer", 16, 8)),
                approval_reasons=("moves 8 accelerators",), approve_url="https://a/yes", reject_url="https://a/no",
                expires="2026-11-30T13:00:00+00:00", warnings=("1 node unhealthy",))
    subject, body = render_text(m)
    assert subject == "Approval needed: quota changes on c1"
    assert "  - research ml.p5.48xlarge accelerators: 8 -> 16 (demand of research)" in body
    assert "Needs approval because: moves 8 accelerators" in body
    assert "Approve:\nhttps://a/yes\nReject:\nhttps://a/no" in body
    assert "  - 1 node unhealthy" in body


def test_subject_fits_sns_limit() -> None:
    subject, _ = render_text(Message(kind="rollback_failed", cluster="x" * 120))
    assert len(subject) <= 100


def test_blocks_have_buttons_only_for_an_approval_request_and_stay_within_slack_limits() -> None:
    many = tuple(_change(f"t{i}", i, i + 1) for i in range(80))
    request = render_blocks(Message(kind="approval_request", cluster="c", approval_id="id1", changes=many,
                                    execution_url="https://console/x"))
    assert len(request) <= 50
    actions = [e for b in request if b["type"] == "actions" for e in b["elements"]]
    assert [(a["action_id"], a.get("value")) for a in actions[:2]] == [("approve", "id1"), ("reject", "id1")]
    contexts = [e["text"] for b in request if b["type"] == "context" for e in b["elements"]]
    assert "…and 40 more changes (see the execution)" in contexts
    applied = render_blocks(Message(kind="applied", cluster="c", approval_id="id1", changes=many[:2],
                                    decided_by="alice"))
    assert not [b for b in applied if b["type"] == "actions"]
    assert any("*Decided by:* alice" in e["text"] for b in applied if b["type"] == "context" for e in b["elements"])


def test_recorded_text_in_slack_blocks_is_escaped_not_read_as_a_mention_or_a_link() -> None:
    """A reservation's reason, a warning or an approver's name is typed by people: `<!channel>` or `<url|x>` in it
    is shown as text, never acted on by Slack."""
    change = Change(team="a", instance_type="ml.p5.48xlarge", resource="accelerators", before=8, after=16,
                    reason="demand 16 > quota 8 & <!channel>")
    m = Message(kind="applied", cluster="c1", changes=(change,), notes=("reserved for <https://x|launch>",),
                warnings=("<@U123> said so",), decided_by="eve <!here>", error="a & b")
    texts = [str(b) for b in render_blocks(m)]
    joined = "\n".join(texts)
    assert "<!channel>" not in joined
    assert "<!here>" not in joined
    assert "<https://x|launch>" not in joined
    assert "<@U123>" not in joined
    assert "demand 16 &gt; quota 8 &amp; &lt;!channel&gt;" in joined
    assert "reserved for &lt;https://x|launch&gt;" in joined
    assert "eve &lt;!here&gt;" in joined


@properties(60)
@given(st.integers(0, 60), st.integers(0, 60), st.integers(0, 60))
def test_changes_held_changes_and_settings_stay_within_slacks_50_blocks_and_each_kind_shows(
        changes: int, held: int, settings: int) -> None:
    kept = Change(team="k", instance_type="ml.p5.48xlarge", resource="accelerators", before=8, after=8, wanted=4,
                  reason="wants 4 because demand 4 (4 running); gets 8 because a change of 4 is below min_step 5",
                  hold=Hold(rule="min_step", text="a change of 4 is below min_step 5"))
    field = FieldChange(team="f", field="ComputeQuotaConfig.PreemptTeamTasks", before="Never", after="LowerPriority")
    m = Message(kind="approval_request", cluster="c", approval_id="id1", execution_url="https://console/x",
                error="boom", notes=("a note",), warnings=("w",), approval_reasons=("r",),
                changes=tuple(_change(f"t{i}", i, i + 1) for i in range(changes)), held=(kept,) * held,
                field_changes=(field,) * settings)
    blocks = render_blocks(m)
    assert len(blocks) <= 50
    text = "\n".join(str(b) for b in blocks)
    assert ("*8 → 8* (held, wants 4)" in text) == bool(held)
    assert ("ComputeQuotaConfig.PreemptTeamTasks" in text) == bool(settings)


def test_the_email_lists_at_most_40_held_back_changes_and_counts_the_rest() -> None:
    kept = Change(team="k", instance_type="ml.p5.48xlarge", resource="accelerators", before=8, after=8, wanted=4,
                  reason="wants 4 because demand 4 (4 running); gets 8 because max_move 64 is reached for this run",
                  hold=Hold(rule="max_move", text="max_move 64 is reached for this run"))
    _, body = render_text(Message(kind="dry_run", cluster="c", held=(kept,) * 10_000))
    assert body.count("held, wants 4") == 40
    assert "  …and 9960 more held back (see the execution)" in body
    assert len(body.encode()) < 256 * 1024 // 4


def test_an_approval_that_cuts_10000_teams_fits_sns_and_keeps_its_links_and_the_largest_changes() -> None:
    m = cut_every_team()
    _, body = render_text(m)
    assert len(body.encode()) <= 256 * 1024 - 4 * 1024  # SNS's 256 KB, with room for the subject and attributes
    assert email_links(body) == {"Approve": m.approve_url, "Reject": m.reject_url}
    assert body.endswith(f"Execution:\n{m.execution_url}\n")
    assert f"Moves: {movement(m.changes)}" in body
    shown_rows = [line for line in body.splitlines() if line.startswith("  - team-") and "->" in line
                  and "accelerators" in line]
    assert shown_rows
    assert all(": 16 -> 9 (" in line for line in shown_rows)  # the largest cuts (7 each), not the first rows
    assert f"the {len(shown_rows)} largest of {TEAMS} to {TEAMS} teams:" in body
    assert f"  …and {TEAMS - len(shown_rows)} more changes (see the execution)" in body
    for what in ("settings", "notes", "warnings"):
        assert f"more {what} (see the execution)" in body
    assert "more reasons (see the execution)" in body


def test_the_slack_approval_at_10000_teams_keeps_within_slacks_limits_and_its_buttons() -> None:
    m = cut_every_team()
    blocks = render_blocks(m)
    assert len(blocks) <= 50
    for b in blocks:
        if b["type"] == "section":
            assert len(b["text"]["text"]) <= 3000
        if b["type"] == "context":
            assert len(b["elements"]) <= 10
            assert all(len(e["text"]) <= 3000 for e in b["elements"])
    assert blocks[0]["type"] == "header"
    assert len(blocks[0]["text"]["text"]) <= 150
    [actions] = [b for b in blocks if b["type"] == "actions"]
    assert [e["action_id"] for e in actions["elements"]] == ["approve", "reject", "open_execution"]
    text = "\n".join(str(b) for b in blocks)
    assert "*16 → 9*" in text
    assert "*16 → 15*" not in text  # the largest cuts are the ones shown
    assert "more warnings" in text
    assert "more notes" in text
