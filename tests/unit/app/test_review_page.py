"""The review page's HTML: every value escaped, every team's quota listed, the form only while pending."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from html.parser import HTMLParser

from hypothesis import given
from hypothesis import strategies as st
from support.props import properties

from rebalancer.app.approvals.review_page import Review, Row, message_page, review_page, rows_of, trigger_text
from rebalancer.domain.plan import Change, Plan

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
PLAN = Plan(cluster_name="c1", cluster_arn="arn:aws:sagemaker:us-east-1:1:cluster/c1", taken_at=NOW, mode="approve",
            allocations={"a": {"ml.p5.48xlarge": {"accelerators": 16.0}, "ml.p4d.24xlarge:1g.5gb": {"partitions": 7.0}},
                         "b": {"ml.p5.48xlarge": {"accelerators": 0.0}, "ml.g5.8xlarge": {"accelerators": 1.0}}},
            changes=(Change(team="b", instance_type="ml.p5.48xlarge", resource="accelerators", before=8, after=0,
                            reason="no demand"),
                     Change(team="a", instance_type="ml.p5.48xlarge", resource="accelerators", before=8, after=16,
                            reason="demand 16")))


def _review(**kw: object) -> Review:
    base: dict[str, object] = {"approval_id": "id1", "cluster": "c1", "status": "pending",
                               "decide_by": NOW + timedelta(minutes=90), "now": NOW, "rows": rows_of(PLAN),
                               "trigger": "alarm", "form": {"nonce": "n"}, "action": "id1/decision"}
    return Review(**{**base, **kw})  # type: ignore[arg-type]


def test_rows_list_every_team_and_pool_once_with_the_plans_numbers() -> None:
    assert rows_of(PLAN) == [
        Row("a", "ml.p4d.24xlarge:1g.5gb", "partitions", 7, 7, "unchanged"),
        Row("a", "ml.p5.48xlarge", "accelerators", 8, 16, "demand 16"),
        Row("b", "ml.g5.8xlarge", "accelerators", 1, 1, "unchanged"),
        Row("b", "ml.p5.48xlarge", "accelerators", 8, 0, "no demand"),
    ]


def test_values_are_escaped() -> None:
    evil = "<script>alert(1)</script>"
    page = review_page(_review(cluster=evil, trigger=evil, warnings=(evil,), approval_reasons=(evil,),
                               rows=[Row(evil, evil, "accelerators", 1, 2, evil)], form={"nonce": "'><b>"}))
    assert "<script>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "value='&#39;&gt;&lt;b&gt;'" in page


class _Tags(HTMLParser):
    """The elements a browser would build, and the hidden fields' values as it would read them."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: set[str] = set()
        self.hidden: dict[str, str] = {}
        self.hrefs: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.add(tag)
        a = dict(attrs)
        if tag == "input" and a.get("type") == "hidden":
            self.hidden[str(a["name"])] = str(a["value"])
        if tag == "a":
            self.hrefs.append(str(a["href"]))


ALLOWED_TAGS = {"html", "head", "meta", "title", "style", "body", "h1", "h2", "p", "dl", "dt", "dd", "ul", "li",
                "div", "table", "thead", "tbody", "tr", "th", "td", "form", "input", "label", "textarea", "button",
                "a", "code", "strong"}


@properties(100)
@given(st.text(max_size=40))
def test_no_value_anywhere_on_the_page_becomes_markup(value: str) -> None:
    """Whatever text arrives in any field (from the plan, the trigger, the approver's name or the nonce), the page a
    browser parses has only the template's own elements, and the hidden fields come back exactly as given."""
    page = review_page(_review(cluster=value, trigger=value, warnings=(value,), approval_reasons=(value,),
                               started_at=value or None, status="pending", execution_url=f"https://x/{value}",
                               rows=[Row(value, value, value, 1, 2, value)], form={"nonce": value, "sig": value},
                               action=value, signed_in_as=value or None))
    decided = review_page(_review(status="approved", decided_by=value))
    message = message_page(value, value, execution_url=value or None)
    for html in (page, decided, message):
        tags = _Tags()
        tags.feed(html)
        assert tags.tags <= ALLOWED_TAGS
    parsed = _Tags()
    parsed.feed(page)
    assert parsed.hidden == {"nonce": value, "sig": value}
    assert parsed.hrefs == [f"https://x/{value}"]


def test_without_an_identity_the_form_asks_for_a_name_and_says_the_link_is_the_credential() -> None:
    page = review_page(_review())
    assert "<input type='text' id='name' name='name' maxlength='80'" in page
    assert "Whoever holds this link can decide" in page
    assert "Signed in as" not in page


def test_with_a_verified_identity_the_name_field_goes() -> None:
    page = review_page(_review(signed_in_as="alice@example.com"))
    assert "id='name'" not in page
    assert "Signed in as <strong>alice@example.com</strong>" in page
    assert "Whoever holds this link" not in page


def test_the_form_is_there_only_while_pending() -> None:
    assert "<form method='post' action='id1/decision'>" in review_page(_review())
    decided = review_page(_review(status="approved", decided_by="alice"))
    assert "<form" not in decided
    assert "already approved by alice" in decided


def test_expiry_and_what_moves_are_shown() -> None:
    page = review_page(_review())
    assert "2026-11-30 13:30 UTC (in 1 h 30 min)" in page
    assert "Moves</dt><dd>8 accelerators taken from teams, 8 given</dd>" in page  # the partitions did not move


@properties(50)
@given(status=st.sampled_from(["approved", "rejected", "expired"]), minutes=st.integers(-600, 600))
def test_a_decided_change_counts_down_to_nothing(status: str, minutes: int) -> None:
    """Once decided (or expired) the page shows the deadline it had, never the time left to it."""
    pending = review_page(_review(decide_by=NOW + timedelta(minutes=minutes)))
    decided = review_page(_review(status=status, decided_by="alice", decide_by=NOW + timedelta(minutes=minutes)))
    when = (NOW + timedelta(minutes=minutes)).strftime("%Y-%m-%d %H:%M UTC")
    assert f"Decide by</dt><dd>{when}</dd>" in decided
    assert " min)" not in decided
    assert "(expired)" not in decided
    assert f"Decide by</dt><dd>{when} (" in pending


def test_trigger_text() -> None:
    assert trigger_text({"kind": "alarm", "summary": "imbalance high"}) == "imbalance high (alarm)"
    assert trigger_text({}) == "not recorded"


def test_message_page_links_the_execution_without_referrer() -> None:
    page = message_page("Approved", "done", execution_url="https://console.example/x?a=1&b=2", ok=True)
    assert "href='https://console.example/x?a=1&amp;b=2' rel='noreferrer'" in page
