"""The demo's narrative as a terminal shows it: the email's links whole on lines of their own (no box to break
them), and Slack's text as Slack renders it (its escapes undone, its markers at word edges only)."""

from __future__ import annotations

from rich.console import Console

from rebalancer.app.notifications.messages import Message, render_blocks, render_text
from rebalancer.domain.plan import Change
from rebalancer_tools.demo.narrative import RichStory, mrkdwn, slack_text

URL = ("http://127.0.0.1:35665/approvals/895fa9e7c417ce1e27280c8a?decision=approve&expires=1796246917&sig="
       "b8011802f5828c9a4aeebf67d538aa7d1f23a3e49169a9fc9e22d2441aae66ae")
CHANGE = Change(team="research", instance_type="ml.p5.48xlarge", resource="accelerators", before=8, after=12,
                reason="demand 12 > allocation 8 & rising; above approval.max_decrease_percent 50 <!channel>")


def told(width: int) -> str:
    console = Console(width=width, record=True, color_system=None)
    subject, body = render_text(Message(kind="approval_request", cluster="c1", changes=(CHANGE,),
                                        approve_url=URL, reject_url=URL.replace("approve", "reject")))
    RichStory(console).email(subject, body)
    return console.export_text()


def test_a_copied_link_is_whole_at_any_width() -> None:
    for width in (60, 100):
        lines = told(width).splitlines()
        assert URL in lines  # the whole URL, alone on its line: no box edge, no fold
        assert all(len(line) <= width for line in lines if line != URL and "reject" not in line)


def test_slack_text_is_rendered_as_written() -> None:
    blocks = render_blocks(Message(kind="approval_request", cluster="c1", changes=(CHANGE,), approval_id="a1"))
    console = Console(width=100, record=True, color_system=None)
    console.print(slack_text({"blocks": blocks}))
    text = " ".join(console.export_text().split())
    assert "demand 12 > allocation 8 & rising" in text
    assert "approval.max_decrease_percent 50 <!channel>" in text  # shown as typed, never a mention
    assert "&gt;" not in text
    assert "&amp;" not in text


def test_mrkdwn_styles_only_whole_marked_words() -> None:
    shown = mrkdwn("*Moves:* a_b_c and _italic words_ and `code` <https://x|the execution>")
    assert shown.plain == "Moves: a_b_c and italic words and code the execution"
    styles = {shown.plain[s.start:s.end]: str(s.style) for s in shown.spans}
    assert styles == {"Moves:": "bold", "italic words": "italic", "code": "cyan", "the execution": "underline"}


def test_the_demo_and_the_sandbox_cluster_pass_the_kueue_rbac_check() -> None:
    """Their Kueue serves what the add-on's does (v1beta1 and v1beta2): every email of a demo that passes carried
    "WARN Kueue RBAC … v1beta1" while it served v1beta1 alone."""
    from rebalancer.adapters.prerequisites import check_kueue_access
    from rebalancer_tools.local import cast

    served = cast.kube_state().kueue_versions

    class NotServed(Exception):
        status = 404

    def list_objects(version: str, plural: str) -> None:
        if version not in served:
            raise NotServed(f"{plural} not served as {version}")

    kueue = check_kueue_access(list_objects)
    assert (kueue.check.status, kueue.api_version) == ("ok", "v1beta2")
