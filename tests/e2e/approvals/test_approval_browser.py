"""The review page in a real browser: Debian's chromium, headless, driven by Playwright, against the approval HTTP
API served on 127.0.0.1 in front of a run waiting in RequestApproval on moto's Step Functions interpreter.
`make browser` installs chromium; the tests are skipped with the reason when it is missing."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.approval_stack import Waiting

from rebalancer.app.approvals.review_page import Row, rows_of

pytestmark = pytest.mark.slow  # a stack deploy, a run on moto's interpreter and a browser: seconds

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]
ARTIFACTS = Path(__file__).resolve().parents[3] / ".artifacts"


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not Path(CHROMIUM).exists():
        missing = "chromium is not installed (make browser installs Debian's package)"
        if os.environ.get("CI"):
            pytest.fail(missing)  # CI runs make test, which installs it: a missing browser there is a bug
        pytest.skip(missing)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield b
        b.close()


def _shown_rows(page: Any) -> list[list[str]]:
    return [[c.strip() for c in cells] for cells in page.eval_on_selector_all(
        "#quotas tbody tr", "rows => rows.map(r => Array.from(r.cells, c => c.textContent))")]


def _expected(row: Row) -> list[str]:
    delta = row.after - row.before
    return [row.team, row.pool, f"{row.before:g}", f"{row.after:g}",
            f"{'+' if delta > 0 else ''}{delta:g}" if delta else "=", row.reason]


def _screenshot(page: Any, name: str) -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / name
    page.screenshot(path=str(path), full_page=True)
    print(f"\nreview page screenshot: {path}")
    return path


def test_approve_in_the_browser_resumes_the_run(waiting: Waiting, browser: Any) -> None:
    before = waiting.quotas()
    page = browser.new_page(viewport={"width": 1100, "height": 900})
    response = page.goto(waiting.links["Approve"])
    assert response.status == 200
    plan = waiting.plan
    assert plan.changes, "the run should propose changes"
    assert _shown_rows(page) == [_expected(r) for r in rows_of(plan)]
    for change in plan.changes:  # the plan's own numbers, not only what rows_of made of them
        assert [change.team, change.instance_type, f"{change.before:g}", f"{change.after:g}"] in \
               [r[:4] for r in _shown_rows(page)]
    assert page.locator("h1").inner_text() == f"Quota change on {waiting.plan.cluster_name}"
    assert "Decide by" in page.locator("dl.meta").inner_text()
    _screenshot(page, "approval-review-page.png")
    # Loading the page (and everything it pulls) decided nothing.
    assert waiting.stack.describe(waiting.arn)["status"] == "RUNNING"
    assert (waiting.approval().status, waiting.quotas()) == ("pending", before)

    page.fill("#name", "alice")
    page.fill("#comment", "fine: research's deadline is Friday")
    with page.expect_navigation():
        page.click("button.approve")
    assert page.locator("h1").inner_text() == "Approved"
    assert "console.aws.amazon.com" in page.locator("a").get_attribute("href")

    done = waiting.stack.wait(waiting.arn)
    assert done["status"] == "SUCCEEDED"
    assert waiting.stack.states_entered(waiting.arn)[-1] == "Applied"
    [audit] = waiting.approval_audit()
    assert (audit["outcome"], audit["who"], audit["detail"]) == \
           ("approved", "alice", {"comment": "fine: research's deadline is Friday"})
    assert waiting.quotas() != before

    page.go_back()  # no-store: going back fetches the page again, which now offers no buttons
    assert "already approved by alice" in page.content()
    assert page.locator("form").count() == 0


def test_reject_on_a_phone_ends_the_run_without_changes(waiting: Waiting, browser: Any) -> None:
    before = waiting.quotas()
    context = browser.new_context(viewport={"width": 390, "height": 844}, device_scale_factor=2, is_mobile=True)
    page = context.new_page()
    assert page.goto(waiting.links["Reject"]).status == 200
    # Readable on a phone: the page fits the screen's width (the table scrolls inside its own box if it must).
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    _screenshot(page, "approval-review-page-phone.png")

    page.fill("#comment", "platform release tonight")
    with page.expect_navigation():
        page.click("button.reject")
    assert page.locator("h1").inner_text() == "Rejected"
    done = waiting.stack.wait(waiting.arn)
    assert done["status"] == "SUCCEEDED"
    assert waiting.stack.states_entered(waiting.arn)[-2:] == ["NotifyRejected", "Rejected"]
    [audit] = waiting.approval_audit()
    assert audit["outcome"] == "rejected"
    assert audit["who"] == "approval page from 127.0.0.1"
    assert audit["detail"] == {"comment": "platform release tonight"}
    assert waiting.quotas() == before
    context.close()
