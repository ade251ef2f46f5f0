"""Reading the approval review page as a form-submitting client would: where its form posts and its hidden fields."""

from __future__ import annotations

import re
from html import unescape

FORM = re.compile(r"<form method='post' action='([^']+)'>")
HIDDEN = re.compile(r"<input type='hidden' name='([^']+)' value='([^']*)'>")


def review_form(page: str) -> tuple[str, dict[str, str]]:
    """(the form's action, its hidden fields). Raises AssertionError when the page has no decision form."""
    action = FORM.search(page)
    assert action is not None, "the page has no decision form"
    return unescape(action.group(1)), {k: unescape(v) for k, v in HIDDEN.findall(page)}


def has_form(page: str) -> bool:
    return FORM.search(page) is not None
