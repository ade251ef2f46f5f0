"""Hypothesis settings for property tests: derandomized (the same examples on every run, so a failure in CI
reproduces locally), no example database, no per-example deadline (CI machines are shared and slow)."""

from __future__ import annotations

from hypothesis import settings


def properties(max_examples: int = 100) -> settings:
    return settings(derandomize=True, database=None, deadline=None, max_examples=max_examples)
