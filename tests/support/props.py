"""Hypothesis settings for property tests: derandomized (the same examples on every run, so a failure in CI
reproduces locally), no example database, no per-example deadline (CI machines are shared and slow).

`make test-fast` sets PROPERTY_EXAMPLES_DIVISOR (10) for a quick edit-run loop; `make test` runs every example."""

from __future__ import annotations

import os

from hypothesis import settings

DIVISOR = max(1, int(os.environ.get("PROPERTY_EXAMPLES_DIVISOR", "1")))


def scaled(max_examples: int) -> int:
    """The examples a property test runs: all of them, or a tenth (at least 10, never more than all) under
    `make test-fast`."""
    return min(max_examples, max(10, max_examples // DIVISOR))


def properties(max_examples: int = 100) -> settings:
    return settings(derandomize=True, database=None, deadline=None, max_examples=scaled(max_examples))
