"""Fixtures of the approval page's end-to-end tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from support.approval_stack import Waiting, waiting_stack


@pytest.fixture
def waiting() -> Iterator[Waiting]:
    with waiting_stack() as w:
        yield w
